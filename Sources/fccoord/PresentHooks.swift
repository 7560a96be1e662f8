import FCBridge
import FCSystem
import FCToolkit
import Foundation

/// Standard output as JSON lines: one object per line, keys sorted, written at once (no buffering), so that a
/// script reading it line by line sees each callback when it happens.
enum JSONLines {
    static func print(_ object: [String: any Sendable]) {
        guard
            var data = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.sortedKeys, .withoutEscapingSlashes]
            )
        else { return }
        data.append(UInt8(ascii: "\n"))
        FileHandle.standardOutput.write(data)
    }
}

/// What `fccoord present` does with each callback: prints it, runs the hook that goes with it, and answers.
///
/// - Important: Called on the presenter's queue, one event at a time.
final class Hooks: Sendable {
    let onRelinquish: String?
    let onSave: String?
    let onDeletion: String?
    /// The presenter, once registered (for the path the hooks get).
    let presenter = Locked<BridgePresenter?>(nil)

    init(onRelinquish: String?, onSave: String?, onDeletion: String?) {
        self.onRelinquish = onRelinquish
        self.onSave = onSave
        self.onDeletion = onDeletion
    }

    func answer(_ event: PresenterEvent, path: String?) -> PresenterRefusal? {
        let current = presenter.withLock { $0 }?.path ?? ""
        var line: [String: any Sendable] = ["event": event.name, "path": current]
        switch event {
        case .presentedItemDidMove(let newPath): line["newPath"] = newPath
        case .accommodatePresentedSubitemDeletion(let subitem), .presentedSubitemDidChange(let subitem),
            .presentedSubitemDidAppear(let subitem), .presentedSubitemDidGainVersion(let subitem),
            .presentedSubitemDidLoseVersion(let subitem), .presentedSubitemDidResolveConflictVersion(let subitem):
            line["subitem"] = subitem
        case .presentedSubitemDidMove(let from, let to):
            line["subitem"] = from
            line["newSubitem"] = to
        case .reacquire(let afterWriter):
            line["after"] = afterWriter ? "writer" : "reader"
        default: break
        }
        JSONLines.print(line)
        let hook: String?
        switch event {
        case .relinquishToReader, .relinquishToWriter: hook = onRelinquish
        case .savePresentedItemChanges: hook = onSave
        case .accommodatePresentedItemDeletion: hook = onDeletion
        default: hook = nil
        }
        guard let hook else { return nil }
        var environment = ProcessInfo.processInfo.environment
        environment["FCCOORD_EVENT"] = event.name
        environment["FCCOORD_PATH"] = current
        let status: Int32
        do {
            status = try ChildProcess.run(
                ["/bin/sh", "-c", hook],
                environment: environment.map { "\($0)=\($1)" },
                outputToError: true
            ).shellStatus
        } catch {
            complain("cannot run the hook for \(event.name): \(error)")
            status = ExitStatus.cannotExecute
        }
        guard status != 0 else { return nil }
        complain("the hook for \(event.name) exited with status \(status)")
        switch event {
        case .relinquishToReader, .relinquishToWriter:
            // A relinquish cannot be refused (Apple's API has no way to): the access goes on.
            return nil
        default:
            return PresenterRefusal(code: Int(status), message: "fccoord present: the hook for \(event.name) failed")
        }
    }
}
