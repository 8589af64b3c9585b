# ftbench for NVIDIA GPUs (H100, H200, ...): PyTorch's CUDA *devel* image, because the LibTorch
# CMake files of a CUDA wheel need nvcc, plus the distribution's packages for everything else.
#
#   docker build -f docker/cuda.Dockerfile -t ftbench:cuda .
#   docker run --rm --gpus all -v "$PWD/reports:/ftbench/reports" \
#     -v "$PWD/checkpoints:/ftbench/checkpoints" ftbench:cuda \
#     run configs/llama3.1-8b-lora-synthetic.yaml --t0 "$(awk '/^btime/{print $2}' /proc/stat)"
#
# Mount checkpoints/ too: train.checkpoint.dir (default checkpoints/{name}) is relative to the
# working directory /ftbench, and a checkpoint inside a --rm container is gone with it, so a
# reclaimed spot run could not resume. Resume with the same command and `--resume latest`.
#
# Pin BASE to the PyTorch you want to measure; wheels of PyTorch >= 2.7 use the C++11 ABI, which
# the distribution's libraries need. The image passes BASE on as FTBENCH_CONTAINER_IMAGE, which
# the report records (environment.software.container_image).
ARG BASE=pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel
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
# The build sees no GPU; name the architectures to compile for (9.0: Hopper).
ARG TORCH_CUDA_ARCH_LIST=9.0
RUN TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST} FTBENCH_DEPS=/nonexistent \
      scripts/device-build.sh -DFTBENCH_BUILD_TESTS=OFF \
    && ln -s /ftbench/build-gpu/src/ftbench /usr/local/bin/ftbench

# tini as PID 1: it passes SIGTERM (docker stop, a spot notice) and SIGINT on to ftbench and
# reaps what ftbench starts. ftbench also stops cleanly as PID 1 itself (docker run --init, or
# an entry point of your own).
ENTRYPOINT ["/usr/bin/tini", "--", "ftbench"]
CMD ["--help"]
