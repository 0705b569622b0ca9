/* sizeclass.c — the class tables (see sizeclass.h; tests/unit/test_sizeclass.c checks them). */
#include "malloc/sizeclass.h"

const uint32_t np_class_size[NP_NCLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096,
	4608, 5120, 5632, 6144, 6656, 7168, 7680, 8192,
	10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
	40960, 49152, 57344, 65536,
};

/* The class of a size in (128, 2048] as a constant expression: 8 + 4 (lg - 7) + the two bits
 * below the top one of size - 1, where lg = floor(log2(size - 1)). */
#define LG_(s) ((s) - 1 >= 1024 ? 10 : (s) - 1 >= 512 ? 9 : (s) - 1 >= 256 ? 8 : 7)
#define CLASS_(s) ((s) <= 128 ? ((s) + 15) / 16 - 1 : 8 + (LG_(s) - 7) * 4 + ((((s) - 1) >> (LG_(s) - 2)) & 3))
/* Entry u covers the sizes (16 (u - 1), 16 u], which share the class of 16 u (class limits
 * are multiples of 16); entry 0 is size 0, served as 1. */
#define E1_(u) (uint8_t)((u) ? CLASS_((u) * 16) : 0),
#define E4_(u) E1_(u) E1_((u) + 1) E1_((u) + 2) E1_((u) + 3)
#define E16_(u) E4_(u) E4_((u) + 4) E4_((u) + 8) E4_((u) + 12)
#define E64_(u) E16_(u) E16_((u) + 16) E16_((u) + 32) E16_((u) + 48)

const uint8_t np_class_of16[NP_TABLE_MAX / 16 + 1] = {E64_(0) E64_(64) E1_(128)};
_Static_assert(NP_TABLE_MAX / 16 + 1 == 129, "the table's initializer covers 0..2048");
