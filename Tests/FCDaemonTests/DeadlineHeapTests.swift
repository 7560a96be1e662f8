import FCTestSupport
import Testing

@testable import FCDaemon

/// The daemon's one heap of deadlines (issue 12): order, moves, cancels, and a bound on what cancelled entries cost.
@Suite struct DeadlineHeapTests {
    @Test func popsDueIDsInDeadlineOrderThenArrivalOrder() {
        var heap = DeadlineHeap<String, Int>()
        heap.schedule("c", at: 30)
        heap.schedule("a", at: 10)
        heap.schedule("b1", at: 20)
        heap.schedule("b2", at: 20)
        #expect(heap.earliest() == 10)
        #expect(heap.popDue(at: 5) == nil)
        #expect(heap.popDue(at: 25) == "a")
        #expect(heap.popDue(at: 25) == "b1")
        #expect(heap.popDue(at: 25) == "b2")
        #expect(heap.popDue(at: 25) == nil)
        #expect(heap.earliest() == 30)
        #expect(heap.popDue(at: 30) == "c")
        #expect(heap.earliest() == nil)
        #expect(heap.count == 0)
    }

    @Test func aCancelledIDNeverComesOut() {
        var heap = DeadlineHeap<Int, Int>()
        heap.schedule(1, at: 10)
        heap.schedule(2, at: 20)
        let cancelled = heap.cancel(1)
        let cancelledAgain = heap.cancel(1)
        #expect(cancelled)
        #expect(!cancelledAgain)
        #expect(heap.earliest() == 20)
        #expect(heap.popDue(at: 100) == 2)
        #expect(heap.popDue(at: 100) == nil)
    }

    @Test func schedulingAgainMovesTheDeadline() {
        var heap = DeadlineHeap<Int, Int>()
        heap.schedule(1, at: 10)
        heap.schedule(2, at: 15)
        heap.schedule(1, at: 40)  // Re-armed later: the old deadline is gone.
        #expect(heap.deadline(of: 1) == 40)
        #expect(heap.popDue(at: 20) == 2)
        #expect(heap.popDue(at: 20) == nil)
        heap.schedule(1, at: 5)  // Re-armed earlier.
        #expect(heap.earliest() == 5)
        #expect(heap.popDue(at: 5) == 1)
        #expect(heap.popDue(at: 1000) == nil)
        #expect(heap.count == 0)
    }

    @Test func cancelledEntriesStayBounded() {
        var heap = DeadlineHeap<Int, Int>()
        heap.schedule(-1, at: 1_000_000)  // One live deadline that is never due here.
        for id in 0..<10_000 {
            heap.schedule(id, at: id)
            heap.cancel(id)
            #expect(heap.storedCount <= 2 * heap.count + DeadlineHeap<Int, Int>.slack + 1)
        }
        for id in 0..<10_000 {
            heap.schedule(7, at: id)  // The same id moved again and again.
            #expect(heap.storedCount <= 2 * heap.count + DeadlineHeap<Int, Int>.slack + 1)
        }
        #expect(heap.count == 2)
        #expect(heap.popDue(at: 1_000_000) == 7)
        #expect(heap.popDue(at: 1_000_000) == -1)
        #expect(heap.popDue(at: 1_000_000) == nil)
    }

    @Test func matchesASortedModelUnderRandomOperations() {
        var generator = SplitMix64(seed: 0x5EED_12)
        var heap = DeadlineHeap<Int, Int>()
        var model: [Int: (deadline: Int, order: Int)] = [:]
        var order = 0
        var now = 0
        for _ in 0..<5_000 {
            let id = Int.random(in: 0..<50, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0, 1:
                let deadline = now + Int.random(in: 0..<100, using: &generator)
                order += 1
                heap.schedule(id, at: deadline)
                model[id] = (deadline, order)
            case 2:
                let wasScheduled = model.removeValue(forKey: id) != nil
                let cancelled = heap.cancel(id)
                #expect(cancelled == wasScheduled)
            default:
                now += Int.random(in: 0..<30, using: &generator)
                let due = model.filter { $0.value.deadline <= now }
                    .sorted { ($0.value.deadline, $0.value.order) < ($1.value.deadline, $1.value.order) }
                    .map(\.key)
                var popped: [Int] = []
                while let id = heap.popDue(at: now) { popped.append(id) }
                #expect(popped == due)
                for id in due { model[id] = nil }
            }
            #expect(heap.count == model.count)
            #expect(heap.earliest() == model.values.map(\.deadline).min())
        }
    }
}
