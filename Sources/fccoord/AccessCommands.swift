import ArgumentParser
import FCBridge
import FileCoordination

struct ReadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Run COMMAND while coordinated reads of every PATH are held.",
        usage: "fccoord read [--timeout <seconds>] [--without-changes] <path> ... -- <command> ...",
        discussion: """
            Presenters of the items save their changes first (unless --without-changes) and relinquish until the \
            command exits; writers wait. The paths to use (where the items are when the claims are granted) are in \
            FCCOORD_PATH_1, FCCOORD_PATH_2, ... of the command's environment. FILECOORD_PURPOSE carries the claims' \
            purpose (--purpose, or a new one), which a nested fccoord and the preload library take as theirs: the \
            command's own coordinated calls never wait for the claims they run inside. fccoord exits with the \
            command's status.
            """
    )

    @OptionGroup var options: CommonOptions

    @Flag(help: "Do not ask presenters to save first.")
    var withoutChanges = false

    @Argument(help: "The items to read.")
    var paths: [String] = []

    func validate() throws {
        if paths.isEmpty { throw ValidationError("at least one PATH is needed") }
        if CommandWords.words.isEmpty { throw ValidationError("a COMMAND is needed after --") }
    }

    func run() throws {
        let items = paths.map {
            CoordinatedItem(path: $0, access: .read(withoutChanges ? .withoutChanges : []))
        }
        throw CommandRunner.run(CommandWords.words, holding: items, settings: options.settings)
    }
}

struct WriteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "Run COMMAND while coordinated writes of every PATH are held.",
        usage: """
            fccoord write [--timeout <seconds>] [--deleting|--moving|--replacing|--merging|--without-changes] \
            <path> ... -- <command> ...
            """,
        discussion: """
            Presenters relinquish (and save, accommodate a deletion, as the option asks) before the command runs; \
            readers and writers wait until it exits. The paths to use are in FCCOORD_PATH_1, FCCOORD_PATH_2, ... of \
            the command's environment. FILECOORD_PURPOSE carries the claims' purpose (--purpose, or a new one), which \
            a nested fccoord and the preload library take as theirs: the command's own coordinated calls never wait \
            for the claims they run inside. fccoord exits with the command's status.
            """
    )

    enum Intent: String, EnumerableFlag {
        case deleting, moving, replacing, merging
        case withoutChanges

        static func name(for value: Intent) -> NameSpecification { .long }

        static func help(for value: Intent) -> ArgumentHelp? {
            switch value {
            case .deleting: "The command deletes the items (presenters accommodate the deletion first)."
            case .moving: "The command moves the items (call nothing else: presenters hear no move from fccoord)."
            case .replacing: "The command replaces whatever is at the paths."
            case .merging: "Presenters save first, then the command merges."
            case .withoutChanges: "Presenters are not asked to save first (no writing option)."
            }
        }
    }

    @OptionGroup var options: CommonOptions

    @Flag var intent: Intent?

    @Argument(help: "The items to write.")
    var paths: [String] = []

    func validate() throws {
        if paths.isEmpty { throw ValidationError("at least one PATH is needed") }
        if CommandWords.words.isEmpty { throw ValidationError("a COMMAND is needed after --") }
    }

    var writingOptions: NSFileCoordinator.WritingOptions {
        switch intent {
        case .deleting: .forDeleting
        case .moving: .forMoving
        case .replacing: .forReplacing
        case .merging: .forMerging
        case .withoutChanges, nil: []
        }
    }

    func run() throws {
        let items = paths.map { CoordinatedItem(path: $0, access: .write(writingOptions)) }
        throw CommandRunner.run(CommandWords.words, holding: items, settings: options.settings)
    }
}

struct MoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "move",
        abstract: "Move SOURCE to DESTINATION in one coordinated write of both.",
        discussion: """
            The source is written .forMoving and the destination .forReplacing; the item is renamed (replacing a \
            file at DESTINATION) and presenters hear that it moved (item(at:didMoveTo:)).
            """
    )

    @OptionGroup var options: CommonOptions
    @Argument var source: String
    @Argument var destination: String

    func run() throws {
        switch Coordination.move(source, to: destination, settings: options.settings) {
        case .success: return
        case .failure(let error): throw ExitStatus.fail(error)
        }
    }
}

struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete PATH (a directory with its contents) in a coordinated write .forDeleting.",
        discussion: "Presenters of the item, and of items inside it, accommodate the deletion first."
    )

    @OptionGroup var options: CommonOptions
    @Argument var path: String

    func run() throws {
        switch Coordination.delete(path, settings: options.settings) {
        case .success: return
        case .failure(let error): throw ExitStatus.fail(error)
        }
    }
}
