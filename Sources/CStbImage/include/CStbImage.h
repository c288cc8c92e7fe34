#ifndef SEANCE_CSTBIMAGE_H
#define SEANCE_CSTBIMAGE_H
// The decoder comes from Debian's libstb-dev; stb_image.c defines its implementation once.
#include <stb/stb_image.h>
#endif
