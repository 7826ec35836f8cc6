/* The one place CUDA errors become WEFT_E* codes. The raw cudaError_t is
 * kept (weft_last_error_raw, weft_cuda_last_error) and the message names the
 * call, CUDA's error name and text, and the weft source line. */
#include <string.h>

#include "cuda_error.h"
#include "error_internal.h"

int weft__cuda_is_sticky(cudaError_t e) {
  /* The errors driver_types.h documents as leaving "the process in an
   * inconsistent state": the context is gone and every later CUDA call
   * returns the same error. cudaErrorUnknown is not among them; it is not
   * documented as sticky, and calling it lost would stop a process that
   * could go on. */
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorAssert:
  case cudaErrorECCUncorrectable:
  case cudaErrorLaunchTimeout:
  case cudaErrorContained:
  case cudaErrorTensorMemoryLeak:
  case cudaErrorExternalDevice:
    return 1;
  default:
    return 0;
  }
}

static int translate(cudaError_t e) {
  switch (e) {
  case cudaErrorMemoryAllocation:
    return WEFT_ENOMEM;
  case cudaErrorInvalidValue:
  case cudaErrorInvalidConfiguration:
  case cudaErrorInvalidDevicePointer:
  case cudaErrorInvalidHostPointer:
  case cudaErrorInvalidMemcpyDirection:
  case cudaErrorInvalidPitchValue:
  case cudaErrorInvalidDeviceFunction:
    return WEFT_EINVAL;
  case cudaErrorInvalidResourceHandle:
  case cudaErrorContextIsDestroyed:
    return WEFT_EHANDLE;
  case cudaErrorNotReady:
    return WEFT_EAGAIN;
  /* No usable device: missing, hidden, too old a driver, a stub library
   * found before the real one, or a driver that failed to start. */
  case cudaErrorNoDevice:
  case cudaErrorInsufficientDriver:
  case cudaErrorInvalidDevice:
  case cudaErrorDevicesUnavailable:
  case cudaErrorSystemDriverMismatch:
  case cudaErrorCompatNotSupportedOnDevice:
  case cudaErrorStubLibrary:
  case cudaErrorSystemNotReady:
  case cudaErrorInitializationError:
    return WEFT_ENODEV;
  case cudaErrorNotSupported:
    return WEFT_ENOTSUP;
  default:
    return weft__cuda_is_sticky(e) ? WEFT_ELOST : WEFT_EDEVICE;
  }
}

/* CMake passes absolute source paths; the message keeps them from src/ on,
 * which is all a reader of a bug report needs. */
static const char *short_path(const char *file) {
  const char *best = NULL;
  for (const char *p = strstr(file, "src/"); p; p = strstr(p + 1, "src/"))
    best = p;
  return best ? best : file;
}

int weft__cuda_error_as(int code, cudaError_t e, const char *call,
                        const char *file, int line) {
  /* cudaGetErrorName and cudaGetErrorString only look up tables, so they
   * are safe even after a sticky error. */
  weft__err_raw(code, (int)e, "%s: %s: %s (%s:%d)", call, cudaGetErrorName(e),
                cudaGetErrorString(e), short_path(file), line);
  /* The failure is now reported through weft; clearing CUDA's per-thread
   * record of it keeps a user's later cudaGetLastError() from blaming their
   * own code for it. A sticky error cannot be cleared, and after one we
   * touch CUDA no further. */
  if (!weft__cuda_is_sticky(e))
    (void)cudaGetLastError();
  return code;
}

int weft__cuda_error(cudaError_t e, const char *call, const char *file,
                     int line) {
  return weft__cuda_error_as(translate(e), e, call, file, line);
}
