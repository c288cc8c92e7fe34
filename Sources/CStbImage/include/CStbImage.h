#ifndef SEANCE_CSTBIMAGE_H
#define SEANCE_CSTBIMAGE_H
// The decoder comes from Debian's libstb-dev; stb_image.c defines its implementation once.
#define STBI_NO_STDIO
#include <stb/stb_image.h>
#endif
