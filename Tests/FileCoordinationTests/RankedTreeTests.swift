import FCTestSupport
import Testing

@testable import FileCoordination

/// The tree that holds a live query's results (issue 44): random insertions, removals and replacements, each checked
/// against an array, with the tree's rules checked after each step, and a copy taken before left as it was.
@Suite struct RankedTreeTests {
    @Test(arguments: [1, 2, 3]) func randomChangesKeepTheOrderTheRulesAndEarlierCopies(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var tree = RankedTree(0..<Int(random.next() % 3_000))
        var model = Array(tree)
        var copies: [(RankedTree<Int>, [Int])] = []
        var next = 10_000
        for step in 0..<4_000 {
            switch random.next() % 7 {
            case 0, 1, 2:
                let position = Int(random.next() % UInt64(model.count + 1))
                tree.insert(next, at: position)
                model.insert(next, at: position)
                next += 1
            case 3, 4, 5:
                guard !model.isEmpty else { continue }
                let position = Int(random.next() % UInt64(model.count))
                #expect(tree.remove(at: position) == model.remove(at: position))
            default:
                guard !model.isEmpty else { continue }
                let position = Int(random.next() % UInt64(model.count))
                tree[position] = -step
                model[position] = -step
            }
            if step % 97 == 0 { copies.append((tree, model)) }
            if let violation = tree.invariantViolation() {
                Issue.record("seed \(seed), step \(step): \(violation)")
                return
            }
        }
        #expect(Array(tree) == model)
        #expect(tree.count == model.count)
        #expect((0..<model.count).allSatisfy { tree[$0] == model[$0] })
        for (copy, itsModel) in copies { #expect(Array(copy) == itsModel) }
    }

    @Test func aTreeMadeFromElementsKeepsTheRulesAndTheirOrder() {
        for count in [0, 1, 47, 48, 49, 2_304, 2_305, 110_593] {
            let tree = RankedTree(0..<count)
            #expect(tree.invariantViolation() == nil, "\(count)")
            #expect(Array(tree) == Array(0..<count))
        }
    }

    @Test func theEndOfAFirstPartIsFoundByBinarySearch() {
        let tree = RankedTree(stride(from: 0, to: 10_000, by: 2))
        #expect(tree.partitioningPosition { $0 < 5 } == 3)
        #expect(tree.partitioningPosition { $0 < 4 } == 2)
        #expect(tree.partitioningPosition { $0 < -1 } == 0)
        #expect(tree.partitioningPosition { $0 < 20_000 } == 5_000)
    }

    @Test func removingEverythingLeavesAnEmptyTree() {
        var tree = RankedTree(0..<5_000)
        while !tree.isEmpty {
            tree.remove(at: tree.count / 2)
            if let violation = tree.invariantViolation() {
                Issue.record("\(tree.count) left: \(violation)")
                return
            }
        }
        #expect(Array(tree).isEmpty)
        tree.insert(1, at: 0)
        #expect(Array(tree) == [1])
    }

    /// A tree three levels deep shrunk at random places to a hundredth, then grown back: nodes below the root are
    /// joined and split again, and the root collapses and grows, with the rules checked as it goes.
    @Test func aDeepTreeShrinksAndGrowsByTheRules() {
        var random = SplitMix64(seed: 5)
        var tree = RankedTree(0..<60_000)
        var model = Array(0..<60_000)
        #expect(tree.height == 3)
        var heights: Set<Int> = []
        for step in 0..<118_800 {
            if step < 59_400 {
                let position = Int(random.next() % UInt64(model.count))
                #expect(tree.remove(at: position) == model.remove(at: position))
            } else {
                let position = Int(random.next() % UInt64(model.count + 1))
                tree.insert(step, at: position)
                model.insert(step, at: position)
            }
            if step % 500 == 0 {
                heights.insert(tree.height)
                if let violation = tree.invariantViolation() {
                    Issue.record("step \(step): \(violation)")
                    return
                }
            }
        }
        #expect(Array(tree) == model)
        #expect(heights.contains(2) && heights.contains(3), "\(heights)")
    }
}
