import Benchmark
import FCCore

// The arbiter's hot path: one uncontended claim, granted and released, on trees of growing size and next to many
// presenters registered elsewhere; and conflict checks on deep paths. CI gates on malloc counts only (deterministic);
// wall clock is reported for people, never gated. Names use no spaces and no '/', so that threshold files match.

/// Registers `count` presenters spread over a tree under `/elsewhere`, `fanout` children per directory.
/// A tree of n presenters holds about n nodes.
private func populate(_ arbiter: Arbiter, presenters count: Int, fanout: Int) {
    let client = ClientID(1)
    _ = arbiter.handle(.clientConnected(ClientInfo(id: client, pid: 1, name: "elsewhere")))
    for index in 0..<count {
        var components: [[UInt8]] = [Array("elsewhere".utf8)]
        var rest = index
        repeat {
            components.append(Array("n\(rest % fanout)".utf8))
            rest /= fanout
        } while rest > 0
        let registration = PresenterRegistration(
            id: PresenterID(UInt64(index + 1)),
            client: client,
            path: ItemPath(components: components)
        )
        _ = arbiter.handle(.presenterAdded(registration))
    }
}

/// One claim of `items`, granted at once, then finished: returns the number of effects (to keep the work alive).
private func grantAndRelease(_ arbiter: Arbiter, id: UInt64, items: [ClaimItem]) -> Int {
    let claim = ClaimID(id)
    let request = ClaimRequest(
        id: claim,
        client: ClientID(2),
        coordinator: CoordinatorID(id),
        purpose: PurposeID("bench"),
        items: items
    )
    let granted = arbiter.handle(.claimRequested(request))
    precondition(granted.count == 1, "the benchmark claim must be uncontended")
    return granted.count + arbiter.handle(.claimFinished(claim, created: [])).count
}

/// An arbiter and a claim-id counter, built once per benchmark outside the measurement.
private final class ArbiterFixture {
    let arbiter: Arbiter
    var nextID: UInt64 = 0

    init(configuration: ArbiterConfiguration = ArbiterConfiguration()) {
        arbiter = Arbiter(configuration: configuration)
    }
}

private func deepPath(_ depth: Int, leaf: String) -> ItemPath {
    ItemPath(components: (0..<depth).map { Array("level\($0)".utf8) } + [Array(leaf.utf8)])
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal, .wallClock],
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 5.0], absolute: [.p90: 20])]
    )

    let item = ClaimItem(path: ItemPath(components: [Array("home".utf8), Array("doc.txt".utf8)]), access: .write([]))

    // The state is built in `setup`, outside the measurement; each sample then grants and releases claims on it.
    for (name, presenters, fanout) in [
        ("emptyTree", 0, 10), ("tree1k", 1_000, 10), ("tree100k", 100_000, 10),
        ("100kPresentersInOneDirectory", 100_000, 100_000),
    ] {
        Benchmark(
            "Arbiter.uncontendedWrite.\(name)",
            closure: { benchmark, fixture in
                for _ in benchmark.scaledIterations {
                    fixture.nextID += 1
                    blackHole(grantAndRelease(fixture.arbiter, id: fixture.nextID, items: [item]))
                }
            },
            setup: { () -> ArbiterFixture in
                let fixture = ArbiterFixture()
                populate(fixture.arbiter, presenters: presenters, fanout: fanout)
                return fixture
            }
        )
    }

    // The same claim with idle nodes pruned at once, as before issue 12 (each claim created and pruned its path's
    // nodes): the baseline of Arbiter.uncontendedWrite.emptyTree in the same run.
    Benchmark(
        "Arbiter.uncontendedWrite.emptyTreeNoIdleNodes",
        closure: { benchmark, fixture in
            for _ in benchmark.scaledIterations {
                fixture.nextID += 1
                blackHole(grantAndRelease(fixture.arbiter, id: fixture.nextID, items: [item]))
            }
        },
        setup: { () -> ArbiterFixture in
            var configuration = ArbiterConfiguration()
            configuration.idleNodeRetention = 0
            return ArbiterFixture(configuration: configuration)
        }
    )

    // An unrelated claim next to 1,000 writers queued behind a held write on one item (issue 11.2): every event
    // still looks at each waiter once (no longer each waiter against every other), with no allocation per waiter.
    // Compare with Arbiter.uncontendedWrite.emptyTree of the same run.
    Benchmark(
        "Arbiter.uncontendedWrite.1000QueuedOnOneItem",
        closure: { benchmark, fixture in
            for _ in benchmark.scaledIterations {
                fixture.nextID += 1
                blackHole(grantAndRelease(fixture.arbiter, id: fixture.nextID, items: [item]))
            }
        },
        setup: { () -> ArbiterFixture in
            let fixture = ArbiterFixture()
            let busy = ItemPath(components: [Array("busy".utf8), Array("log.txt".utf8)])
            for index in 0...1_000 {
                let request = ClaimRequest(
                    id: ClaimID(UInt64(1_000_000_000 + index)),
                    client: ClientID(UInt64(100 + index)),
                    coordinator: CoordinatorID(1),
                    purpose: PurposeID("queued-\(index)"),
                    items: [ClaimItem(path: busy, access: .write([]))]
                )
                _ = fixture.arbiter.handle(.claimRequested(request))
            }
            return fixture
        }
    )

    // A reader at depth 64 under a directory held for deleting: the conflict is found walking up 64 ancestors.
    Benchmark("Arbiter.conflictCheck.depth64") { benchmark in
        // The conflict check alone: the deadlock detector's timer for the waiting reader is left out.
        let arbiter = Arbiter(configuration: ArbiterConfiguration(deadlockDetectionDelay: nil))
        let holder = ClaimRequest(
            id: ClaimID(1),
            client: ClientID(1),
            coordinator: CoordinatorID(1),
            purpose: PurposeID("holder"),
            items: [ClaimItem(path: deepPath(0, leaf: "root"), access: .write(.forDeleting))]
        )
        _ = arbiter.handle(.claimRequested(holder))
        let reader = ClaimItem(path: deepPath(64, leaf: "file.txt"), access: .read([]))
        var id: UInt64 = 1
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            id += 1
            let request = ClaimRequest(
                id: ClaimID(id),
                client: ClientID(2),
                coordinator: CoordinatorID(id),
                purpose: PurposeID("reader"),
                items: [
                    ClaimItem(
                        path: ItemPath(components: [Array("root".utf8)] + reader.path.components),
                        access: .read([])
                    )
                ]
            )
            let waiting = arbiter.handle(.claimRequested(request))
            precondition(waiting.isEmpty, "the reader must wait")
            blackHole(arbiter.handle(.claimCancelled(ClaimID(id))))
        }
    }

    // Two-item claims at depth 32 that share the same parent: canonical, all-at-once grant.
    Benchmark("Arbiter.uncontendedMove.depth32") { benchmark in
        let arbiter = Arbiter()
        let from = ClaimItem(path: deepPath(32, leaf: "a.txt"), access: .write(.forMoving))
        let to = ClaimItem(path: deepPath(32, leaf: "b.txt"), access: .write(.forReplacing))
        var id: UInt64 = 0
        for _ in benchmark.scaledIterations {
            id += 1
            blackHole(grantAndRelease(arbiter, id: id, items: [from, to]))
        }
    }

    Benchmark("ItemPath.parse.depth16") { benchmark in
        let text = "/" + (0..<16).map { "component\($0)" }.joined(separator: "/") + "/./x/../file.txt"
        for _ in benchmark.scaledIterations {
            blackHole(try ItemPath(absolute: text))
        }
    }
}
