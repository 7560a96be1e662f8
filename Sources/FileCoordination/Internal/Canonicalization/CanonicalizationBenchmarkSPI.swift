import FCCore

/// The canonicaliser, for the benchmark suite only (Benchmarks/, CanonicalizationBenchmarks): not API.
///
/// - Important: Thread-safe, as ``PathCanonicalizer``.
@_spi(Benchmarking)
public enum CanonicalizationBenchmarkSPI {
    /// The canonical key of an absolute path as byte components (`nil` on failure), through the process's shared
    /// cache.
    public static func canonicalize(_ path: String) -> [[UInt8]]? {
        try? PathCanonicalizer.shared.canonicalize(path, followingFinalLink: true).key.components
    }

    /// Forgets the cached directories, so that the next call walks the path from the root.
    public static func removeAllCached() {
        PathCanonicalizer.shared.removeAllCached()
        pathsOnly.removeAllCached()
    }

    /// A canonicaliser by paths alone, as before issue 26 (`stat`, no mount ids, no bind-mount mapping).
    private static let pathsOnly = PathCanonicalizer(mountAliases: nil)

    /// ``canonicalize(_:)`` as before issue 26, for the comparison in the same run.
    public static func canonicalizeByPathsOnly(_ path: String) -> [[UInt8]]? {
        try? pathsOnly.canonicalize(path, followingFinalLink: true).key.components
    }
}
