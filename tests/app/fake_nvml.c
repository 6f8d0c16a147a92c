/* A stand-in for libnvidia-ml.so.1 with the same symbol names and C types,
 * so the NvmlSampler's dlopen path runs on machines without an NVIDIA GPU.
 * A test in the same process steers it through fake_nvml_configure() (looked
 * up with dlsym on the same handle the sampler loaded); a test that runs
 * the real binary (BATCHPILOT_NVML_LIBRARY=this library) through the
 * environment instead: FAKE_NVML_SAMPLE="GPU%,MEMORY%,USED_BYTES,TOTAL_BYTES"
 * sets what every device reports, read at the first nvmlInit_v2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct fake_device *nvmlDevice_t;
typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;
typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

enum { NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
       NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_DRIVER_NOT_LOADED = 9, NVML_ERROR_GPU_IS_LOST = 15 };

struct fake_device {
    int index;
};

static struct fake_device devices[4] = {{0}, {1}, {2}, {3}};
static unsigned int device_count = 1;
static nvmlReturn_t init_result = NVML_SUCCESS;
static nvmlReturn_t utilization_result = NVML_SUCCESS;
static unsigned int gpu_util = 0, memory_util = 0;
static unsigned long long memory_used = 0, memory_total = 0;
static int initialised = 0, init_calls = 0, shutdown_calls = 0;

void fake_nvml_configure(unsigned int count, nvmlReturn_t init, nvmlReturn_t utilization, unsigned int gpu,
                         unsigned int memory, unsigned long long used, unsigned long long total)
{
    device_count = count > 4 ? 4 : count;
    init_result = init;
    utilization_result = utilization;
    gpu_util = gpu;
    memory_util = memory;
    memory_used = used;
    memory_total = total;
}

void fake_nvml_calls(int *inits, int *shutdowns)
{
    *inits = init_calls;
    *shutdowns = shutdown_calls;
}

static void configure_from_environment(void)
{
    const char *sample = getenv("FAKE_NVML_SAMPLE");
    unsigned int gpu = 0, memory = 0;
    unsigned long long used = 0, total = 0;
    if (sample && sscanf(sample, "%u,%u,%llu,%llu", &gpu, &memory, &used, &total) == 4) {
        gpu_util = gpu;
        memory_util = memory;
        memory_used = used;
        memory_total = total;
    }
}

nvmlReturn_t nvmlInit_v2(void)
{
    if (init_calls == 0)
        configure_from_environment();
    ++init_calls;
    if (init_result != NVML_SUCCESS)
        return init_result;
    initialised = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    ++shutdown_calls;
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    initialised = 0;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    *count = device_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (index >= device_count || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    char text[64];
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    snprintf(text, sizeof text, "Fake GPU %d", device->index);
    if (strlen(text) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(name, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (utilization_result != NVML_SUCCESS)
        return utilization_result;
    /* Different per device, so the test sees which one was opened. */
    utilization->gpu = gpu_util + (unsigned int)device->index;
    utilization->memory = memory_util;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    (void)device;
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    memory->total = memory_total;
    memory->used = memory_used;
    memory->free = memory_total - memory_used;
    return NVML_SUCCESS;
}
