import CNotesTerminal
import Foundation

/// The terminal the editor runs in: raw mode and the alternate screen while it runs, keys decoded from standard
/// input, the screen written in one piece per frame.
///
/// - Important: `enter()` and `leave()` are called from the main thread; `write(_:)` from the editor's queue only.
final class Terminal: @unchecked Sendable {
    private var saved = termios()
    private var isRaw = false

    /// Puts the terminal in raw mode and switches to the alternate screen.
    func enter() throws {
        guard cnotes_terminal_enter_raw(0, &saved) == 0 else {
            throw NotesError("standard input is not a terminal (run notes in a terminal, or in tmux)")
        }
        isRaw = true
        write("\u{1B}[?1049h\u{1B}[H\u{1B}[2J")
    }

    /// Back to the normal screen and the settings the terminal had.
    func leave() {
        guard isRaw else { return }
        write("\u{1B}[?25h\u{1B}[?1049l")
        _ = cnotes_terminal_restore(0, &saved)
        isRaw = false
    }

    /// The window's size, or 24 × 80 when it cannot be had.
    var size: (rows: Int, columns: Int) {
        var rows: Int32 = 0
        var columns: Int32 = 0
        guard cnotes_terminal_size(1, &rows, &columns) == 0, rows > 4, columns > 10 else { return (24, 80) }
        return (Int(rows), Int(columns))
    }

    func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// A key the editor understands.
enum Key: Equatable {
    case character(Character)
    case enter, backspace, delete, up, down, left, right, home, end, escape
    case control(Character)  // ^A … ^Z as their letter
}

/// Decodes the bytes of standard input into keys; keeps an incomplete sequence for the next chunk.
struct KeyDecoder {
    private var pending: [UInt8] = []

    mutating func decode(_ bytes: [UInt8]) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        var index = 0
        while index < pending.count {
            let byte = pending[index]
            switch byte {
            case 0x1B:
                // ESC [ X, ESC [ n ~; a lone ESC is Escape.
                if index + 1 >= pending.count {
                    keys.append(.escape)
                    index += 1
                } else if pending[index + 1] == UInt8(ascii: "[") || pending[index + 1] == UInt8(ascii: "O") {
                    guard index + 2 < pending.count else {
                        pending.removeFirst(index)
                        return keys
                    }
                    var end = index + 2
                    while end < pending.count && (pending[end] < 0x40 || pending[end] > 0x7E) { end += 1 }
                    guard end < pending.count else {
                        pending.removeFirst(index)
                        return keys
                    }
                    let body = String(decoding: pending[(index + 2)...end], as: UTF8.self)
                    switch body {
                    case "A": keys.append(.up)
                    case "B": keys.append(.down)
                    case "C": keys.append(.right)
                    case "D": keys.append(.left)
                    case "H", "1~", "7~": keys.append(.home)
                    case "F", "4~", "8~": keys.append(.end)
                    case "3~": keys.append(.delete)
                    default: break
                    }
                    index = end + 1
                } else {
                    keys.append(.escape)
                    index += 1
                }
            case 0x0D, 0x0A:
                keys.append(.enter)
                index += 1
            case 0x7F, 0x08:
                keys.append(.backspace)
                index += 1
            case 0x01...0x1A:
                keys.append(.control(Character(Unicode.Scalar(byte + 0x60))))
                index += 1
            case 0x00..<0x20:
                index += 1
            default:
                // A UTF-8 character: its length from the lead byte.
                let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
                guard index + length <= pending.count else {
                    pending.removeFirst(index)
                    return keys
                }
                let text = String(decoding: pending[index..<(index + length)], as: UTF8.self)
                keys.append(contentsOf: text.map(Key.character))
                index += length
            }
        }
        pending.removeAll()
        return keys
    }
}

/// An error the editor shows before it exits.
struct NotesError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
