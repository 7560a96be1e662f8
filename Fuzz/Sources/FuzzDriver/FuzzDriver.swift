/// What every fuzz target hands libFuzzer: one input's bytes in, 0 out (libFuzzer's `LLVMFuzzerTestOneInput`).
public typealias FuzzTarget = @convention(c) (UnsafePointer<UInt8>, Int) -> CInt

/// Hands the command line to libFuzzer's driver, which runs `target` on every input.
///
/// SwiftPM's debug builds link an executable's entry point as `<module>_main` (there is none with
/// `-parse-as-library`): each target defines that symbol and calls this.
public func runFuzzer(
    _ argc: CInt,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
    _ target: FuzzTarget
) -> CInt {
    var count = argc
    var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return LLVMFuzzerRunDriver(&count, &arguments, target)
}

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: FuzzTarget
) -> CInt
