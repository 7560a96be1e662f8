#include "filecoord.h"

int filecoord_abi_version(void) { return FILECOORD_ABI_VERSION; }

const char *filecoord_version(void) { return "1.0.0"; }
