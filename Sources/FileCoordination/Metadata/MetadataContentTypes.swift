// The uniform type identifiers of common files by extension, for `NSMetadataItem`'s content type and type tree
// (issue 44). Linux has no type registry that knows Apple's identifiers, so the common ones are listed here with the
// chain of types each conforms to, as Apple declares them (UTCoreTypes.h); a name this table does not know is
// `public.data`.
//
// A value table: usable from any thread.

enum MetadataContentTypes {
    /// Extension (lowercased) -> identifier.
    private static let byExtension: [String: String] = [
        "txt": "public.plain-text", "text": "public.plain-text", "md": "net.daringfireball.markdown",
        "markdown": "net.daringfireball.markdown", "rtf": "public.rtf", "html": "public.html", "htm": "public.html",
        "xml": "public.xml", "json": "public.json", "csv": "public.comma-separated-values-text",
        "swift": "public.swift-source", "c": "public.c-source", "h": "public.c-header", "py": "public.python-script",
        "sh": "public.shell-script", "pdf": "com.adobe.pdf", "jpg": "public.jpeg", "jpeg": "public.jpeg",
        "png": "public.png", "gif": "com.compuserve.gif", "heic": "public.heic", "tiff": "public.tiff",
        "tif": "public.tiff", "svg": "public.svg-image", "mp3": "public.mp3", "m4a": "com.apple.m4a-audio",
        "wav": "com.microsoft.waveform-audio", "mp4": "public.mpeg-4", "mov": "com.apple.quicktime-movie",
        "zip": "public.zip-archive", "gz": "org.gnu.gnu-zip-archive", "tar": "public.tar-archive",
    ]

    /// Identifier -> the identifier it conforms to first (its parent in the tree).
    private static let parent: [String: String] = [
        "public.plain-text": "public.text", "net.daringfireball.markdown": "public.plain-text",
        "public.rtf": "public.text", "public.html": "public.text", "public.xml": "public.text",
        "public.json": "public.text", "public.comma-separated-values-text": "public.delimited-values-text",
        "public.delimited-values-text": "public.text", "public.swift-source": "public.source-code",
        "public.c-source": "public.source-code", "public.c-header": "public.source-code",
        "public.python-script": "public.script", "public.shell-script": "public.script",
        "public.script": "public.source-code", "public.source-code": "public.plain-text",
        "public.text": "public.data", "com.adobe.pdf": "public.data", "public.jpeg": "public.image",
        "public.png": "public.image", "com.compuserve.gif": "public.image", "public.heic": "public.image",
        "public.tiff": "public.image", "public.svg-image": "public.image", "public.image": "public.data",
        "public.mp3": "public.audio", "com.apple.m4a-audio": "public.audio",
        "com.microsoft.waveform-audio": "public.audio", "public.audio": "public.audiovisual-content",
        "public.mpeg-4": "public.movie", "com.apple.quicktime-movie": "public.movie",
        "public.movie": "public.audiovisual-content", "public.audiovisual-content": "public.data",
        "public.zip-archive": "public.archive", "org.gnu.gnu-zip-archive": "public.archive",
        "public.tar-archive": "public.archive", "public.archive": "public.data", "public.data": "public.item",
        "public.folder": "public.directory", "public.directory": "public.item",
    ]

    /// Types that are also content (`public.content`), as Apple's tree lists them.
    private static let content: Set<String> = [
        "public.text", "public.image", "public.audiovisual-content", "com.adobe.pdf",
    ]

    /// The identifier of an item called `name`.
    static func type(ofName name: String, isDirectory: Bool) -> String {
        if isDirectory { return "public.folder" }
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "public.data" }
        return byExtension[name[name.index(after: dot)...].lowercased()] ?? "public.data"
    }

    /// `type` and every type it conforms to, most specific first (`public.content` where it applies).
    static func tree(of type: String) -> [String] {
        var tree = [type]
        var isContent = content.contains(type)
        while let next = parent[tree[tree.count - 1]], tree.count < 16 {
            tree.append(next)
            isContent = isContent || content.contains(next)
        }
        if isContent { tree.append("public.content") }
        return tree
    }
}
