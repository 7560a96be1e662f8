#include "cnotes_terminal.h"

#include <sys/ioctl.h>

int cnotes_terminal_enter_raw(int fd, struct termios *saved) {
    if (tcgetattr(fd, saved) != 0) return -1;
    struct termios raw = *saved;
    raw.c_iflag &= ~(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_oflag &= ~(OPOST);
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    return tcsetattr(fd, TCSAFLUSH, &raw);
}

int cnotes_terminal_restore(int fd, const struct termios *saved) {
    return tcsetattr(fd, TCSAFLUSH, saved);
}

int cnotes_terminal_size(int fd, int *rows, int *columns) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return -1;
    *rows = size.ws_row;
    *columns = size.ws_col;
    return 0;
}
