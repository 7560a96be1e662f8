internal import SystemPackage

/// Calls `body` with `byteCount` bytes written by `write` and a NUL after them, in a temporary buffer (on the stack
/// for a path up to a few KiB): how a path kept as bytes (a name need not be UTF-8) reaches a system call.
func withNulTerminated<Result>(
    byteCount: Int,
    _ write: (UnsafeMutableBufferPointer<UInt8>) -> Void,
    _ body: (UnsafePointer<CChar>) throws(Errno) -> Result
) throws(Errno) -> Result {
    let outcome: Swift.Result<Result, Errno> = withUnsafeTemporaryAllocation(
        of: UInt8.self,
        capacity: byteCount + 1
    ) { buffer in
        write(UnsafeMutableBufferPointer(rebasing: buffer[..<byteCount]))
        buffer[byteCount] = 0
        return buffer.withMemoryRebound(to: CChar.self) { characters in
            Swift.Result { () throws(Errno) -> Result in try body(characters.baseAddress!) }
        }
    }
    return try outcome.get()
}

/// Calls `body` with `path`'s own C string (`withCString`: a `String` passed as `const char *` is copied into an array
/// first, issue 39), for the `String` forms of the calls whose byte forms use ``withNulTerminated(_:_:)``.
func withNulTerminated<Result>(
    _ path: String,
    _ body: (UnsafePointer<CChar>) throws(Errno) -> Result
) throws(Errno) -> Result {
    try path.withCString { path in Swift.Result { () throws(Errno) -> Result in try body(path) } }.get()
}

/// ``withNulTerminated(byteCount:_:_:)`` for a path given as its bytes.
func withNulTerminated<Result>(
    _ path: [UInt8],
    _ body: (UnsafePointer<CChar>) throws(Errno) -> Result
) throws(Errno) -> Result {
    try withNulTerminated(byteCount: path.count, { _ = $0.initialize(fromContentsOf: path) }, body)
}
