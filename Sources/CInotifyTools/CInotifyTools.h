// libinotifytools' API and the kernel's inotify definitions, for Swift.
#include <inotifytools/inotifytools.h>
#include <inotifytools/inotify.h>
