// The terminal calls of the `notes` example that Swift cannot make through Foundation: raw mode (termios) and the
// window size (TIOCGWINSZ). Each returns 0, or -1 with errno set; errno is preserved otherwise.
#ifndef CNOTES_TERMINAL_H
#define CNOTES_TERMINAL_H

#include <termios.h>

/// Saves the terminal settings of `fd` in `*saved`, then puts it in raw mode (no echo, no line editing, no signals
/// from keys, reads return after one byte).
int cnotes_terminal_enter_raw(int fd, struct termios *saved);

/// Restores the settings saved by cnotes_terminal_enter_raw.
int cnotes_terminal_restore(int fd, const struct termios *saved);

/// The window size of the terminal on `fd`.
int cnotes_terminal_size(int fd, int *rows, int *columns);

#endif
