// fcdemo: a walk through the arbiter, in process, with every decision printed.
//
// Three programs share a folder: an editor presenting a document, a sync tool and a backup tool. The arbiter is the
// same `FCCore` state machine that `filecoordd` will run; here the demo plays the three programs and answers for the
// editor's presenter, so each step of docs/SEMANTICS.md §2 and §3 shows up as a line.

import FCCore
import FCTestSupport

let h = ArbiterHarness()
var names: [ClientID: String] = [:]
var presenterNames: [PresenterID: String] = [:]

@MainActor func say(_ line: String) { print(line) }
@MainActor func heading(_ title: String) { print("\n== \(title)") }

/// Prints what the arbiter decided in the last event.
@MainActor func show() {
    for effect in h.lastEffects {
        switch effect {
        case .grant(let claim, let client, let paths):
            say("   arbiter -> \(names[client]!): \(claim) granted, accessor runs with \(paths.map(\.description))")
        case .fail(let claim, let client, let failure):
            say("   arbiter -> \(names[client]!): \(claim) failed: \(failure)")
        case .message(let message):
            let who = presenterNames[message.presenter] ?? "\(message.presenter)"
            say("   arbiter -> \(who): \(message.kind)")
        case .startTimer, .cancelTimer, .log, .watch, .unwatch, .watchUnavailable, .watchAvailable, .grantLease,
            .recallLease,
            .leaseDropped, .claimInsideLease, .fileWithOtherNamesWritten, .hostGateWanted, .hostGateDrained,
            .drainWatcher:
            break
        }
    }
}

@MainActor func connect(_ name: String) -> ClientID {
    let id = h.connect(name)
    names[id] = name
    return id
}

let editor = connect("editor")
let sync = connect("sync")
let backup = connect("backup")

heading("The editor opens Notes.txt and presents it; the sync tool presents the folder")
let document = h.present("/home/demo/Notes.txt", client: editor)
presenterNames[document] = "editor's document"
let folder = h.present("/home/demo", client: sync, callbacks: [.presentedSubitemDidChange, .presentedSubitemDidMove])
presenterNames[folder] = "sync's folder presenter"
say("   presenters: \(h.arbiter.snapshot().presenters.count), access nodes: \(h.arbiter.snapshot().nodeCount)")

heading("The sync tool writes Notes.txt; the backup tool asks to read it meanwhile")
let write = h.write("/home/demo/Notes.txt", client: sync)
say("sync: coordinate(writingItemAt: Notes.txt)")
show()
let read = h.read("/home/demo/Notes.txt", client: backup)
say("backup: coordinate(readingItemAt: Notes.txt)")
show()
say("   backup waits behind \(h.arbiter.blockers(of: read)) (readers wait for a writer)")
for (request, _) in h.openRequests(of: document) {
    say("editor: relinquishes to the writer and hands back a reacquirer")
    h.reply(request, .relinquished(reacquirer: true))
    show()
}
say("sync: the accessor writes the file and returns")
h.finish(write)
show()
while let (request, kind) = h.openRequests(of: document).first {
    switch kind {
    case .savePresentedItemChanges:
        say("editor: saves its unsaved changes")
        h.reply(request, .succeeded)
    default:
        say("editor: relinquishes to the reader")
        h.reply(request, .relinquished(reacquirer: true))
    }
    show()
}
say("backup: the accessor copies the file and returns")
h.finish(read)
show()

heading("The editor refuses to save: the reader gets the editor's error, intact, and its accessor never runs")
let refused = h.read("/home/demo/Notes.txt", client: backup)
show()
while let (request, kind) = h.openRequests(of: document).first {
    if kind == .savePresentedItemChanges {
        say("editor: save fails (disk full)")
        h.reply(
            request,
            .failed(PresenterError(domain: "NSCocoaErrorDomain", code: 640, message: "The disk is full."))
        )
    } else {
        say("editor: relinquishes to the reader")
        h.reply(request, .relinquished(reacquirer: true))
    }
    show()
}
say("   backup's \(refused): \(h.failure(refused).map(\.description) ?? "granted")")

heading("The sync tool renames Notes.txt while the backup tool waits for it: the waiting read follows the move")
let move = h.claim(
    [
        ArbiterHarness.write("/home/demo/Notes.txt", .forMoving),
        ArbiterHarness.write("/home/demo/Notes 2026.txt", .forReplacing),
    ],
    client: sync
)
show()
h.answerAll()
show()
let waiting = h.read("/home/demo/Notes.txt", .withoutChanges, client: backup)
say("backup: coordinate(readingItemAt: Notes.txt) waits: \(h.arbiter.phase(of: waiting)!)")
say("sync: renames the file and calls item(at:didMoveTo:)")
h.send(
    .itemMoved(
        move,
        from: ArbiterHarness.path("/home/demo/Notes.txt"),
        to: ArbiterHarness.path("/home/demo/Notes 2026.txt")
    )
)
show()
h.finish(move)
show()
h.answerAll()
show()
h.finish(waiting)
show()

heading("A process dies holding a claim: its claim is released and the waiter goes on")
let doomed = connect("crashy")
let held = h.write("/home/demo/other.txt", client: doomed)
show()
let next = h.write("/home/demo/other.txt", client: sync)
say("sync waits behind crashy's \(held): \(h.arbiter.phase(of: next)!)")
say("crashy: killed")
h.send(.clientDisconnected(doomed))
show()
h.finish(next)
show()

h.send(.clientDisconnected(editor))
h.send(.clientDisconnected(sync))
h.send(.clientDisconnected(backup))
let end = h.arbiter.snapshot()
heading("Everyone left")
say("   claims: \(end.claims.count), presenters: \(end.presenters.count), access nodes: \(end.nodeCount)")
let statistics = h.arbiter.statistics
say(
    "   claims granted: \(statistics.claimsGranted), failed: \(statistics.claimsFailed), "
        + "messages sent: \(statistics.messagesSent)"
)
