# ftbench for AMD GPUs (MI300X, ...): on AMD's rocm/pytorch-training image, the one the public
# H100 vs MI300X run used (ROCm 6.3; docs/cost-and-compare.md). Its PyTorch is a ROCm build;
# LibTorch's CMake files find HIP under /opt/rocm.
#
#   docker build -f docker/rocm.Dockerfile -t ftbench:rocm .
#   docker run --rm --device=/dev/kfd --device=/dev/dri --group-add video \
#     --security-opt seccomp=unconfined -v "$PWD/reports:/ftbench/reports" \
#     -v "$PWD/checkpoints:/ftbench/checkpoints" ftbench:rocm \
#     run configs/llama3.1-8b-lora-synthetic.yaml --t0 "$(awk '/^btime/{print $2}' /proc/stat)"
#
# Mount checkpoints/ too: train.checkpoint.dir (default checkpoints/{name}) is relative to the
# working directory /ftbench, and a checkpoint inside a --rm container is gone with it, so a
# reclaimed spot run could not resume. Resume with the same command and `--resume latest`.
#
# BASE is pinned: `latest` moves. v25.6 is the ROCm 6.3 line of AMD's training image (ROCm
# 6.3.4, PyTorch 2.8.0a0, Ubuntu 22.04, Python 3.10, as listed by microsoft/superbenchmark's
# dockerfile/rocm6.3.x.dockerfile, PR #790, merged 2026-05-16; looked up 2026-12-02), the ROCm
# the public reference run used. Pin a digest for runs you mean to compare. The image passes
# BASE on as FTBENCH_CONTAINER_IMAGE, which the report records
# (environment.software.container_image).
ARG BASE=rocm/pytorch-training:v25.6
FROM ${BASE}
ARG BASE
ENV FTBENCH_CONTAINER_IMAGE=${BASE}

ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config git ca-certificates \
      libyaml-cpp-dev nlohmann-json3-dev libfmt-dev libspdlog-dev libcli11-dev \
      libgtest-dev libgmock-dev libssl-dev libpcre2-dev libsentencepiece-dev tini \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /ftbench
COPY . .
# gfx942: MI300X / MI300A / MI325X.
ARG PYTORCH_ROCM_ARCH=gfx942
RUN PYTORCH_ROCM_ARCH=${PYTORCH_ROCM_ARCH} FTBENCH_DEPS=/nonexistent \
      scripts/device-build.sh -DFTBENCH_BUILD_TESTS=OFF \
    && ln -s /ftbench/build-gpu/src/ftbench /usr/local/bin/ftbench

# tini as PID 1: it passes SIGTERM (docker stop, a spot notice) and SIGINT on to ftbench and
# reaps what ftbench starts. ftbench also stops cleanly as PID 1 itself (docker run --init, or
# an entry point of your own).
ENTRYPOINT ["/usr/bin/tini", "--", "ftbench"]
CMD ["--help"]
