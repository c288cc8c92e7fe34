#ifndef SEANCE_CSTBIMAGE_H
#define SEANCE_CSTBIMAGE_H
// The decoder comes from Debian's libstb-dev; stb_image.c defines its implementation once.
#include <stddef.h>
#define STBI_NO_STDIO
#include <stb/stb_image.h>

/// The largest single allocation stb may make on this thread from now on (0: no limit).
void seance_stbi_set_allocation_limit(size_t bytes);

/// stbi_load_from_memory, failing ("corrupt") when the file broke one of the decoder's own checks
/// on the way instead of ending the process.
unsigned char *seance_stbi_load_from_memory(const unsigned char *bytes, int length, int *width, int *height,
                                            int *channels, int desired_channels);
#endif
