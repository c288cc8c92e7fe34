// stb_image is a single-header library: exactly one translation unit defines the implementation.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO_FOPEN_WARNING
#include "CStbImage.h"
