// CFCLinux's shims are `static inline` in its headers; this file only gives the target a source file, as SwiftPM
// requires of a C target.
#include "CFCLinux.h"
