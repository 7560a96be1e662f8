import ArgumentParser
import FCBridge
import FileCoordination

struct ReadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Run COMMAND while coordinated reads of every PATH are held.",
        usage: """
            fccoord read [-n] [-w <seconds>] [-E <status>] [--without-changes] <path> ... -- <command> ...
              fccoord read --fd <n> [-n] [-w <seconds>] [-E <status>] [--without-changes] <path> ...
            """,
        discussion: """
            Presenters of the items save their changes first (unless --without-changes) and relinquish until the \
            command exits; writers wait. The paths to use (where the items are when the claims are granted) are in \
            FCCOORD_PATH_1, FCCOORD_PATH_2, ... of the command's environment. FILECOORD_PURPOSE carries the claims' \
            purpose (--purpose, or a new one), which a nested fccoord and the preload library take as theirs: the \
            command's own coordinated calls never wait for the claims they run inside. fccoord exits with the \
            command's status. With --fd N instead of a command, the claims are held from fccoord's return until the \
            shell closes its descriptor N or exits (see fccoord write --help).
            """
    )

    @OptionGroup var options: CommonOptions

    @Option(name: .customLong("fd"), help: DescriptorHold.help)
    var descriptor: Int32?

    @Flag(help: "Do not ask presenters to save first.")
    var withoutChanges = false

    @Argument(help: "The items to read.")
    var paths: [String] = []

    func validate() throws {
        try DescriptorHold.validate(paths: paths, descriptor: descriptor)
    }

    func run() throws {
        let items = paths.map {
            CoordinatedItem(path: $0, access: .read(withoutChanges ? .withoutChanges : []))
        }
        if let descriptor { throw DescriptorHold.run(holding: items, descriptor: descriptor, options: options) }
        throw CommandRunner.run(CommandWords.words, holding: items, options: options)
    }
}

struct WriteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "Run COMMAND while coordinated writes of every PATH are held.",
        usage: """
            fccoord write [-n] [-w <seconds>] [-E <status>] \
            [--deleting|--moving|--replacing|--merging|--without-changes] <path> ... -- <command> ...
              fccoord write --fd <n> [-n] [-w <seconds>] [-E <status>] [--deleting|...] <path> ...
            """,
        discussion: """
            Presenters relinquish (and save, accommodate a deletion, as the option asks) before the command runs; \
            readers and writers wait until it exits. The paths to use are in FCCOORD_PATH_1, FCCOORD_PATH_2, ... of \
            the command's environment. FILECOORD_PURPOSE carries the claims' purpose (--purpose, or a new one), which \
            a nested fccoord and the preload library take as theirs: the command's own coordinated calls never wait \
            for the claims they run inside. fccoord exits with the command's status.

            With --fd N instead of a command, as `flock 9` in a script: fccoord returns 0 once the claims are \
            granted, and a process of its own (detached, in a session of its own, writing nothing) holds them until \
            the shell that ran fccoord no longer has its descriptor N open on the same file, or exits: \
            ( fccoord write -n --fd 9 doc || exit 1; commands ) 9>doc, or exec 9>doc; fccoord write --fd 9 doc; \
            commands; exec 9>&-. A close is seen when it closes the last descriptor of that open file: a command \
            still running with a copy of it keeps the claims until it closes it too, or the shell exits (a close \
            inotify does not report is found within 30 s). fccoord ended before the grant holds nothing. The \
            commands in between are not given the claims' purpose (a nested fccoord of the same items waits) \
            unless the script passes --purpose P and exports FILECOORD_PURPOSE=P itself.
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

    @Option(name: .customLong("fd"), help: DescriptorHold.help)
    var descriptor: Int32?

    @Flag var intent: Intent?

    @Argument(help: "The items to write.")
    var paths: [String] = []

    func validate() throws {
        try DescriptorHold.validate(paths: paths, descriptor: descriptor)
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
        if let descriptor { throw DescriptorHold.run(holding: items, descriptor: descriptor, options: options) }
        throw CommandRunner.run(CommandWords.words, holding: items, options: options)
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
        case .failure(let error): throw options.fail(error)
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
        case .failure(let error): throw options.fail(error)
        }
    }
}
