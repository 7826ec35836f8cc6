/* Shared declarations for every weft header: export macro and C++ guards. */
#ifndef WEFT_COMMON_H
#define WEFT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(WEFT_STATIC_DEFINE)
#define WEFT_API
#elif defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#ifdef __cplusplus
#define WEFT_BEGIN_DECLS extern "C" {
#define WEFT_END_DECLS }
#else
#define WEFT_BEGIN_DECLS
#define WEFT_END_DECLS
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_STRING "0.1.0"

#endif
