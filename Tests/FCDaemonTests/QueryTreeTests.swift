import FCCore
import FCSystem
import Testing

@testable import FCDaemon

/// A live query's tree (issue 44): each item once per batch, a folder's subtree removed with it.
@Suite struct QueryTreeTests {
    private func path(_ string: String) -> ItemPath { try! ItemPath(absolute: string) }
    private func file(_ size: Int64) -> ItemMetadata {
        ItemMetadata(size: size, isDirectory: false, modified: Double(size), changed: Double(size))
    }
    private let folder = ItemMetadata(size: 0, isDirectory: true, modified: 1, changed: 1)

    @Test func eachItemIsToldOncePerBatch() {
        let tree = QueryTree(root: path("/r"), maximumItems: 100)
        var gathering = QueryTree.Delta()
        tree.set(path("/r/a"), file(1), into: &gathering)
        tree.set(path("/r/b"), file(1), into: &gathering)
        var delta = QueryTree.Delta()
        // Added then changed: added; changed twice: changed once; added then removed: nothing.
        tree.set(path("/r/n"), file(1), into: &delta)
        tree.set(path("/r/n"), file(2), into: &delta)
        tree.set(path("/r/a"), file(2), into: &delta)
        tree.set(path("/r/a"), file(3), into: &delta)
        tree.set(path("/r/t"), file(1), into: &delta)
        tree.set(path("/r/t"), nil, into: &delta)
        tree.set(path("/r/b"), nil, into: &delta)
        // Outside the tree, and the root itself: nothing.
        tree.set(path("/other"), file(1), into: &delta)
        tree.set(path("/r"), folder, into: &delta)
        #expect(delta.added == [path("/r/n"): file(2)])
        #expect(delta.changed == [path("/r/a"): file(3)])
        #expect(delta.removed == [path("/r/b")])
        #expect(tree.count == 2)
    }

    @Test func aRemovedFolderTakesItsSubtreeAndItsWatches() {
        let tree = QueryTree(root: path("/r"), maximumItems: 100)
        var gathering = QueryTree.Delta()
        tree.set(path("/r/d"), folder, into: &gathering)
        tree.set(path("/r/d/e"), folder, into: &gathering)
        tree.set(path("/r/d/e/f"), file(1), into: &gathering)
        tree.set(path("/r/x"), file(1), into: &gathering)
        #expect(tree.directoryCount == 2)
        var delta = QueryTree.Delta()
        tree.set(path("/r/d"), nil, into: &delta)
        #expect(delta.removed == [path("/r/d"), path("/r/d/e"), path("/r/d/e/f")])
        #expect(Set(delta.unwatch) == [path("/r/d"), path("/r/d/e")])
        #expect(tree.items.map(\.0) == [path("/r/x")])
        #expect(tree.directoryCount == 0)
    }

    @Test func aTreeKeepsAtMostItsLimit() {
        let tree = QueryTree(root: path("/r"), maximumItems: 2)
        var delta = QueryTree.Delta()
        for name in ["a", "b", "c"] { tree.set(path("/r/\(name)"), file(1), into: &delta) }
        #expect(tree.count == 2)
        #expect(tree.overLimit)
    }

    @Test func anItemWhoseFolderIsNotInTheTreeIsNotAdded() {
        let tree = QueryTree(root: path("/r"), maximumItems: 100)
        var delta = QueryTree.Delta()
        // Told by an event before its folder was listed (or after it went): nothing would ever remove it.
        tree.set(path("/r/x/y"), file(1), into: &delta)
        #expect(tree.count == 0 && delta.isEmpty)
        tree.set(path("/r/x"), folder, into: &delta)
        tree.set(path("/r/x/y"), file(1), into: &delta)
        #expect(tree.count == 2)
        tree.set(path("/r/x"), nil, into: &delta)
        #expect(tree.count == 0 && tree.folderNodes == 1)
    }
}
