/* sizeclass.c — the class size table (see sizeclass.h; tests check it against the formula). */
#include "malloc/sizeclass.h"

const uint32_t np_class_size[NP_NCLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192,
	10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
};
