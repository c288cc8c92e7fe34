// stb_image is a single-header library: exactly one translation unit defines the implementation.
// Only the formats seance accepts are compiled in, and nothing reads files: seance does that.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_GIF
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#include "CStbImage.h"
