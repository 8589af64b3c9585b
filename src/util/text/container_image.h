// A container image reference as a report records one (environment.software.container_image),
// checked where it is read from the environment (device/recorded_environment.h) and where a
// report is read (report/report.cpp).
#pragma once

#include <string>
#include <string_view>

namespace ftbench::text {

// Why `value` is not a container image reference as environment.software.container_image
// records one ("" when it is one, or empty): at most 255 characters of A-Z a-z 0-9 . _ - / :,
// optionally followed by one @algorithm:hex digest (rocm/pytorch-training:v25.6,
// nvcr.io/nvidia/pytorch:25.01-py3, localhost:5000/ftbench:cuda, name@sha256:<64 hex>). The
// value comes from the environment (FTBENCH_CONTAINER_IMAGE), where anything can be set: a URL
// with credentials, terminal escapes or megabytes of text never reach a report.
std::string container_image_problem(std::string_view value);

}  // namespace ftbench::text
