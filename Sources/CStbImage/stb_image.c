// stb_image is a single-header library: exactly one translation unit defines the implementation.
// Only the formats seance accepts are compiled in, and nothing reads files: seance does that.
#include <stdlib.h>
#include "CStbImage.h"

// Every allocation stb makes goes through these, and none may exceed the budget the caller set
// for the image being decoded: a small file whose compressed data expands without end (a
// "zlib bomb") then fails with "outofmem" instead of taking gigabytes. The budget is per
// thread, so decodes on different threads do not share it.
static _Thread_local size_t seance_stbi_budget = 0;

void seance_stbi_set_allocation_limit(size_t bytes) { seance_stbi_budget = bytes; }

static void *seance_stbi_malloc(size_t size) {
    if (seance_stbi_budget && size > seance_stbi_budget) return NULL;
    return malloc(size);
}

static void *seance_stbi_realloc(void *pointer, size_t size) {
    if (seance_stbi_budget && size > seance_stbi_budget) return NULL;
    return realloc(pointer, size);
}

#define STBI_MALLOC(size) seance_stbi_malloc(size)
#define STBI_REALLOC(pointer, size) seance_stbi_realloc(pointer, size)
#define STBI_FREE(pointer) free(pointer)
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_GIF
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#include <stb/stb_image.h>
