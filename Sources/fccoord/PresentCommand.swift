import ArgumentParser
import FCBridge
import FCSystem
import FCToolkit
import FileCoordination
import Foundation

struct PresentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "present",
        abstract: "Present PATH and print every presenter callback as one JSON line, until interrupted.",
        discussion: """
            The first line is {"event":"ready",...}, printed once the daemon has the presenter. Each callback is one \
            line {"event":NAME,"path":...} with Apple's name of the callback (relinquishPresentedItemToWriter, \
            savePresentedItemChanges, presentedItemDidMove with "newPath", presentedSubitemDidChange with "subitem", \
            ...), printed before fccoord answers it. --on-relinquish and --on-save run a shell command (sh -c) \
            before the answer, with FCCOORD_EVENT and FCCOORD_PATH in its environment and its standard output sent \
            to standard error; a save hook that exits non-zero refuses the save, and the access that asked fails. \
            SIGINT, SIGTERM and SIGHUP remove the presenter and end fccoord with status 0.
            """
    )

    @OptionGroup var options: CommonOptions

    @Option(name: .customLong("on-relinquish"), help: "Shell command run before relinquishing to a reader or writer.")
    var onRelinquish: String?

    @Option(name: .customLong("on-save"), help: "Shell command run when asked to save; non-zero refuses the save.")
    var onSave: String?

    @Option(
        name: .customLong("on-deletion"),
        help: "Shell command run before the item is deleted; non-zero refuses the deletion."
    )
    var onDeletion: String?

    @Flag(help: "The item is a package: a directory that is one document.")
    var package = false

    @Argument(help: "The item to present.")
    var path: String

    func run() throws {
        let stopSignals = [SIGINT, SIGTERM, SIGHUP]
        SignalWaiting.block(stopSignals)
        let hooks = Hooks(onRelinquish: onRelinquish, onSave: onSave, onDeletion: onDeletion)
        let presenter = BridgePresenter.register(path: path, isPackage: package) { event in
            let refusal = hooks.answer(event, path: nil)
            return refusal
        }
        hooks.presenter.withLock { $0 = presenter }
        // A coordinated read of the item on the presenter's behalf is granted only after the daemon registered it.
        let barrier = Coordination.access(
            [CoordinatedItem(path: path, access: .read(.withoutChanges))],
            settings: options.settings,
            coordinator: NSFileCoordinator(filePresenter: presenter)
        ) { _ in }
        if case .failure(let error) = barrier {
            presenter.remove()
            throw options.fail(error)
        }
        JSONLines.print([
            "event": "ready", "path": presenter.path, "pid": Int(ProcessIdentity.processID),
        ])
        _ = SignalWaiting.wait(for: stopSignals)
        presenter.remove()
    }
}
