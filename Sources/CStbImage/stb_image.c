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

// Zeroed: stb 2.27 decodes a JPEG scan with whichever Huffman table it names, defined or not, and
// an undefined one used to be whatever an earlier allocation left there (a fuzzed picture then
// decoded differently from one run to the next, and once broke the decoder's own assertion).
static void *seance_stbi_malloc(size_t size) {
    if (seance_stbi_budget && size > seance_stbi_budget) return NULL;
    return calloc(1, size);
}

static void *seance_stbi_realloc(void *pointer, size_t size) {
    if (seance_stbi_budget && size > seance_stbi_budget) return NULL;
    return realloc(pointer, size);
}

#define STBI_MALLOC(size) seance_stbi_malloc(size)
#define STBI_REALLOC(pointer, size) seance_stbi_realloc(pointer, size)
#define STBI_FREE(pointer) free(pointer)
// stb checks its own state with assert(), and a crafted file can break a check (a Huffman table
// whose 256th symbol has a short code takes the slow path and finds another symbol): that would
// end the process. The check is kept, and a broken one fails the decode instead.
static _Thread_local int seance_stbi_check_failed = 0;
#define STBI_ASSERT(condition) ((condition) ? (void)0 : (void)(seance_stbi_check_failed = 1))
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_GIF
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#include <stb/stb_image.h>

unsigned char *seance_stbi_load_from_memory(const unsigned char *bytes, int length, int *width, int *height,
                                            int *channels, int desired_channels) {
    seance_stbi_check_failed = 0;
    unsigned char *pixels = stbi_load_from_memory(bytes, length, width, height, channels, desired_channels);
    if (pixels && seance_stbi_check_failed) {
        stbi_image_free(pixels);
        stbi__err("corrupt", "Corrupt image");
        return NULL;
    }
    return pixels;
}
