import CInotifyTools

// libinotifytools keeps the name of every watch it added, and never lets it go when the kernel drops the watch
// (`IN_IGNORED`: the directory or linked file was deleted): asked for the descriptor of that name, it hands back the
// dead watch's, even after a new watch of a new item of the same name. So a name it holds for no live watch is given
// to it spelled another way, which the kernel resolves to the same path. Runs on the watcher's thread.

extension InotifyWatcher {
    /// What a spelling names: libinotifytools keeps a directory's name with a final `/`.
    enum SpelledItem {
        case directory
        case file
    }

    /// The most spellings tried for one name: a directory deleted and made again this many times while watched is not
    /// watched again (its watch fails, and says so), rather than searched for without end.
    static let maximumSpellings = 256

    /// `path` as libinotifytools can be given it: as it is when libinotifytools holds no watch of that name, or holds
    /// a live one; else with one more `/.` before its last component than the last spelling it holds for no live
    /// watch. `nil` after ``maximumSpellings`` tries, or for a path of no slash.
    func unseenSpelling(_ path: String, as item: SpelledItem) -> String? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let head = String(path[..<slash])
        let tail = String(path[slash...])
        var spelling = path
        for dots in 0..<Self.maximumSpellings {
            if dots > 0 { spelling = head + String(repeating: "/.", count: dots) + tail }
            let known = inotifytools_wd_from_filename(item == .directory ? spelling + "/" : spelling)
            if known < 0 || byDescriptor[known] != nil || linked.watch(known) != nil { return spelling }
        }
        return nil
    }
}
