/* The C interface of ftbench's GPU query modules: libftbench_cuda_query.so (CUDA runtime) and
 * libftbench_hip_query.so (HIP runtime), built from src/device/query_modules and loaded at run time
 * by device::GpuQuery (device/gpu_query.h). Plain C so that the modules need neither LibTorch nor
 * the C++ standard library of the program that loads them.
 *
 * Every call returns 0 on success. On failure it returns the runtime's error code (non-zero)
 * and writes "<error name>: <error string>" (or the name alone when the runtime's string is the
 * name) into `error`, NUL-terminated and cut to `error_size` bytes. Calls may be made from any
 * one thread at a time; the module keeps no state of its own.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Bumped whenever a struct or a signature below changes; the loader refuses other versions. */
#define FTBENCH_GPU_QUERY_ABI_VERSION 2

/* The modules are built with hidden visibility; these are the only symbols they export. */
#if defined(__GNUC__)
#define FTBENCH_GPU_QUERY_EXPORT __attribute__((visibility("default")))
#else
#define FTBENCH_GPU_QUERY_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* What one device is. Integers are -1 when the runtime does not say. */
typedef struct ftbench_gpu_device {
  char name[256];               /* "NVIDIA H200", "AMD Instinct MI300X" */
  char arch[256];               /* "sm_90" (compute capability), "gfx942:sramecc+:xnack-" */
  char pci_bus_id[32];          /* "0000:3b:00.0"; "" when unknown */
  int64_t total_memory_bytes;   /* device memory */
  int64_t multiprocessor_count; /* streaming multiprocessors (CUDA) or compute units (ROCm) */
  int64_t l2_cache_bytes;
  int64_t clock_khz;        /* peak SM / shader clock */
  int64_t memory_clock_khz; /* peak memory clock */
  int64_t memory_bus_width_bits;
} ftbench_gpu_device;

/* FTBENCH_GPU_QUERY_ABI_VERSION of the module. Never fails. */
FTBENCH_GPU_QUERY_EXPORT int ftbench_gpu_query_abi_version(void);

/* "cuda" or "hip": the runtime the module was built against. Never fails. */
FTBENCH_GPU_QUERY_EXPORT const char* ftbench_gpu_query_runtime(void);

/* Devices visible to the process. Without a driver or a device this fails with the runtime's
 * own error ("cudaErrorInsufficientDriver: ...", "hipErrorNoDevice"). */
FTBENCH_GPU_QUERY_EXPORT int ftbench_gpu_device_count(int* count, char* error, size_t error_size);

/* The driver's and the runtime's version numbers, as the runtime encodes them (CUDA: 1000 *
 * major + 10 * minor; HIP: HIP_VERSION, 10^7 * major + 10^5 * minor + patch). 0 when there is
 * no driver. */
FTBENCH_GPU_QUERY_EXPORT int ftbench_gpu_versions(int* driver_version, int* runtime_version,
                                                  char* error, size_t error_size);

/* Properties of device `index` (0 <= index < count). */
FTBENCH_GPU_QUERY_EXPORT int ftbench_gpu_device_properties(int index, ftbench_gpu_device* out,
                                                           char* error, size_t error_size);

/* Free and total memory of device `index`, device-wide (every process and library). Makes
 * `index` the calling thread's current device, as LibTorch does for work on it, and creates
 * the runtime's context there if there was none. */
FTBENCH_GPU_QUERY_EXPORT int ftbench_gpu_memory_info(int index, int64_t* free_bytes,
                                                     int64_t* total_bytes, char* error,
                                                     size_t error_size);

/* Since version 2: board power and energy of a device, through the vendor's management library,
 * which the module loads with dlopen when first asked (it is not linked: a machine without it
 * still has device facts). CUDA: NVML (libnvidia-ml.so.1); HIP: AMD SMI (libamd_smi.so), else
 * ROCm SMI (librocm_smi64.so). The
 * device is found there by its PCI bus id, so CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES
 * renumbering does not matter. */
typedef struct ftbench_gpu_power_sensor {
  char library[128];       /* the library loaded, as dlopen was given it: "libnvidia-ml.so.1" */
  char energy_source[128]; /* the counter's call, "nvmlDeviceGetTotalEnergyConsumption"; "" when
                              the device has no energy counter */
  char power_source[128];  /* the power call, "nvmlDeviceGetPowerUsage"; "" when none */
} ftbench_gpu_power_sensor;

typedef struct ftbench_gpu_power_reading {
  /* The device's cumulative energy counter, millijoules from an arbitrary origin (driver load);
   * it may wrap or restart. -1 when the device has no counter or this read of it failed. */
  int64_t energy_millijoules;
  /* Board power as the library reports it (NVML: instantaneous, or a 1 s average on Ampere and
   * later but GA100; AMD SMI, ROCm SMI: the current socket power where the device gives it,
   * else the average), milliwatts. -1 when unknown. */
  int64_t power_milliwatts;
} ftbench_gpu_power_reading;

/* Opens the management library (once per process) and device `index`'s power sensor, and says
 * what it offers. Fails, with the library's words, when the library cannot be loaded or
 * initialised, the device is not found there, or it offers neither a counter nor power. */
FTBENCH_GPU_QUERY_EXPORT int ftbench_gpu_power_open(int index, ftbench_gpu_power_sensor* out,
                                                    char* error, size_t error_size);

/* Reads device `index`'s counter and power now (after ftbench_gpu_power_open succeeded for it).
 * Succeeds when at least one figure was read; the other is then -1. */
FTBENCH_GPU_QUERY_EXPORT int ftbench_gpu_power_read(int index, ftbench_gpu_power_reading* out,
                                                    char* error, size_t error_size);

#ifdef __cplusplus
}
#endif
