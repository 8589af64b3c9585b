// Removing a folder and everything under it, with POSIX calls rather than
// std::filesystem::remove_all.
//
// Why: a PyTorch wheel's libtorch_cpu.so carries a statically linked copy of the std::filesystem
// of a newer libstdc++ and exports it (pytorch/pytorch#133437). A program that links LibTorch
// before libstdc++ has its calls bound to that copy, or the system libstdc++'s remove_all
// calling into it, and on the H200 machine (PyTorch 2.11, GCC 13) remove_all crashed with
// SIGSEGV: every pruning of old checkpoints and every clean-up of a checkpoint that failed to
// write. remove_tree calls none of std::filesystem's exported functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <system_error>

namespace ftbench::io {

// Removes `path`: a file or a symbolic link itself, a folder with everything under it; links
// inside are removed, never followed. The path itself is resolved by the system as given: a
// link to a folder named with a trailing slash ("link/") is that folder, as for rm -r.
// Each level down holds one file descriptor while its entries go (a tree deeper than the
// process's descriptor limit fails with EMFILE, as std::filesystem::remove_all does).
// Returns the entries removed, 0 when nothing is at `path` (not an error).
// Stops at the first entry it cannot remove, sets `ec` to why and returns
// static_cast<std::uintmax_t>(-1), as std::filesystem::remove_all(path, ec) does.
std::uintmax_t remove_tree(const std::filesystem::path& path, std::error_code& ec) noexcept;

// The same; throws std::system_error naming the path.
std::uintmax_t remove_tree(const std::filesystem::path& path);

}  // namespace ftbench::io
