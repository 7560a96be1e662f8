import Benchmark
import FCSystem
@_spi(Benchmarking) import FileCoordination
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// Canonicalising a 16-component path (issue 14): the client's canonicaliser cold (every component walked from the
// root: one lstat each, the link read) and cached (the parent validated by (st_dev, st_ino): 2-3 syscalls), against
// a plain realpath(3) of the same path in the same run. The path has a symbolic link in the middle. Wall clock is
// reported, never gated; malloc counts are deterministic.
//
// Issue 26 (one file, many paths): `…byPathsOnly` is the canonicaliser as it was before (stat, no mount ids, no
// bind-mount mapping), in the same run, on the same path (no hard link, no bind mount on it): the mount decision is
// carried by the parent cache and the file's identity comes from the stat already made, so the two should match.

/// `<tmp>/fc-canon-bench-<pid>/d1/…/d7/link/d9/…/d14/file`: 16 components below `/` once `<tmp>` is counted as
/// one, the link pointing at a sibling directory.
private let fixture: String = {
    let base = NSTemporaryDirectory().trimmingCharacters(in: CharacterSet(charactersIn: "/"))
    var path = "/" + base + "/fc-canon-bench-\(ProcessIdentity.processID)"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    for index in 1...7 { path += "/d\(index)" }
    try? FileManager.default.createDirectory(atPath: path + "/real", withIntermediateDirectories: true)
    try? FileManager.default.createSymbolicLink(atPath: path + "/link", withDestinationPath: "real")
    path += "/link"
    for index in 9...14 { path += "/d\(index)" }
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    path += "/file"
    FileManager.default.createFile(atPath: path, contents: Data("x".utf8))
    return path
}()

private func plainRealpath(_ path: String) -> Int {
    guard let resolved = realpath(path, nil) else { return 0 }
    defer { free(resolved) }
    return strlen(resolved)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal, .wallClock, .syscalls],
        scalingFactor: .kilo,
        maxDuration: .seconds(2)
    )
    let path = fixture
    precondition(CanonicalizationBenchmarkSPI.canonicalize(path) != nil)

    Benchmark("Canonicalize.path16.realpath") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(plainRealpath(path)) }
    }

    Benchmark("Canonicalize.path16.cold") { benchmark in
        for _ in benchmark.scaledIterations {
            CanonicalizationBenchmarkSPI.removeAllCached()
            blackHole(CanonicalizationBenchmarkSPI.canonicalize(path))
        }
    }

    Benchmark("Canonicalize.path16.cached") { benchmark in
        _ = CanonicalizationBenchmarkSPI.canonicalize(path)
        for _ in benchmark.scaledIterations { blackHole(CanonicalizationBenchmarkSPI.canonicalize(path)) }
    }

    Benchmark("Canonicalize.path16.cold.byPathsOnly") { benchmark in
        for _ in benchmark.scaledIterations {
            CanonicalizationBenchmarkSPI.removeAllCached()
            blackHole(CanonicalizationBenchmarkSPI.canonicalizeByPathsOnly(path))
        }
    }

    Benchmark("Canonicalize.path16.cached.byPathsOnly") { benchmark in
        _ = CanonicalizationBenchmarkSPI.canonicalizeByPathsOnly(path)
        for _ in benchmark.scaledIterations { blackHole(CanonicalizationBenchmarkSPI.canonicalizeByPathsOnly(path)) }
    }
}
