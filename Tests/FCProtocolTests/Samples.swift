import FCCore
import FCProtocol
import Foundation
import SwiftProtobuf
import Testing

/// A path from a string literal, for tests.
func path(_ string: String) -> ItemPath {
    do {
        return try ItemPath(absolute: string)
    } catch {
        fatalError("bad test path \(string): \(error)")
    }
}

/// Raw path bytes, as the wire carries them.
func bytes(_ string: String) -> Data { Data(string.utf8) }

/// One frame of every message of filecoord.proto, with every field set to something other than its default.
enum Samples {
    static let frames: [Filecoord_V1_Frame] = [
        Filecoord_V1_Frame(.hello(Filecoord_V1_Hello(clientName: "TextEdit", pid: 4242))),
        Filecoord_V1_Frame(
            .registerPresenter(
                .with {
                    $0.presenterID = 7
                    $0.path = bytes("/home/u/Documents/a.txt")
                    $0.callbacks = PresenterCallbacks.all.rawValue
                    $0.isPackage = true
                    $0.serialQueue = 0x7f00_1234_5678
                }
            )
        ),
        Filecoord_V1_Frame(.unregisterPresenter(.with { $0.presenterID = 7 })),
        Filecoord_V1_Frame(
            .presenterURLChanged(
                .with {
                    $0.presenterID = 7
                    $0.path = bytes("/home/u/Documents/b.txt")
                }
            )
        ),
        Filecoord_V1_Frame(
            .requestClaim(
                .with {
                    $0.claimID = 1 << 40
                    $0.coordinatorID = 3
                    $0.purpose = "com.example.app.sync"
                    $0.filePresenterID = 7
                    $0.fromPresenterQueue = 8
                    $0.fromCallback = PresenterCallbacks.relinquishToWriter.rawValue
                    $0.timeoutMilliseconds = 2_500
                    $0.items = [
                        .with {
                            $0.path = bytes("/home/u/a")
                            $0.write = true
                            $0.options = UInt64(WritingOptions.forMoving.rawValue)
                        },
                        .with {
                            $0.path = bytes("/home/u/b")
                            $0.options = UInt64(ReadingOptions.withoutChanges.rawValue)
                        },
                    ]
                    $0.isPreparation = true
                }
            )
        ),
        Filecoord_V1_Frame(
            .finishClaim(
                .with {
                    $0.claimID = 9
                    $0.created = [bytes("/home/u/new1"), bytes("/home/u/new2")]
                }
            )
        ),
        Filecoord_V1_Frame(.cancelCoordinator(.with { $0.coordinatorID = 3 })),
        Filecoord_V1_Frame(.cancelClaim(.with { $0.claimID = 9 })),
        Filecoord_V1_Frame(
            .presenterReply(
                .with {
                    $0.requestID = 11
                    $0.failed = .with {
                        $0.domain = "NSCocoaErrorDomain"
                        $0.code = -513
                        $0.message = "You don't have permission."
                    }
                }
            )
        ),
        Filecoord_V1_Frame(
            .itemMoved(
                .with {
                    $0.claimID = 9
                    $0.from = bytes("/home/u/a")
                    $0.to = bytes("/home/u/b")
                }
            )
        ),
        Filecoord_V1_Frame(
            .versionChanged(
                .with {
                    $0.claimID = 9
                    $0.path = bytes("/home/u/a")
                    $0.kind = .resolved
                    $0.versionID = "v-1234"
                }
            )
        ),
        Filecoord_V1_Frame(.dumpRequest(Filecoord_V1_DumpRequest())),
        Filecoord_V1_Frame(
            .helloReply(Filecoord_V1_HelloReply(version: 1, daemonPID: 99, limits: ProtocolLimits.default))
        ),
        Filecoord_V1_Frame(
            .refused(
                .with {
                    $0.daemonProtocolVersion = 1
                    $0.reason = "protocol version mismatch"
                }
            )
        ),
        Filecoord_V1_Frame(
            .granted(
                .with {
                    $0.claimID = 9
                    $0.paths = [bytes("/home/u/a"), bytes("/home/u/\u{00E9}t\u{00E9}")]
                }
            )
        ),
        Filecoord_V1_Frame(
            .claimFailed(
                .with {
                    $0.claimID = 9
                    $0.kind = .presenterError
                    $0.presenterError = .with {
                        $0.domain = "com.example"
                        $0.code = 42
                        $0.message = "disk full"
                    }
                    $0.presenterID = 7
                    $0.message = "presenter#7 failed"
                }
            )
        ),
        Filecoord_V1_Frame(
            .presenterMessage(
                .with {
                    $0.presenterID = 7
                    $0.requestID = 12
                    $0.claimID = 9
                    $0.kind = .presentedSubitemDidMove
                    $0.path = bytes("/home/u/d/a")
                    $0.path2 = bytes("/home/u/d/b")
                    $0.versionKind = .added
                    $0.versionID = "v-1"
                    $0.reacquireRequestID = 5
                }
            )
        ),
        Filecoord_V1_Frame(.protocolError(.with { $0.reason = "malformed frame: truncated" })),
        Filecoord_V1_Frame(.dumpReply(Filecoord_V1_DumpReply(json: Array(#"{"clients":[]}"#.utf8)))),
        // Version store (issue 15).
        Filecoord_V1_Frame(
            .versionStoreRequest(
                .with {
                    $0.requestID = 9
                    $0.operation = .add
                    $0.itemPath = bytes("/home/u/d/a")
                    $0.contentsPath = bytes("/home/u/Downloads/a")
                    $0.byMoving = true
                    $0.savingComputer = "laptop"
                    $0.originator = "Ada"
                }
            )
        ),
        Filecoord_V1_Frame(
            .versionStoreReply(
                .with {
                    $0.requestID = 9
                    $0.versions = [
                        .with {
                            $0.id = "v-1"
                            $0.itemPath = bytes("/home/u/d/a")
                            $0.name = "a"
                            $0.contentsPath = bytes("/home/u/.local/share/filecoordd/versions/contents/v-1/a")
                            $0.savingComputer = "laptop"
                            $0.modificationDate = 1_700_000_000
                            $0.addedDate = 1_700_000_001
                            $0.isConflict = true
                        }
                    ]
                }
            )
        ),
        // Leases (issue 23).
        Filecoord_V1_Frame(
            .leaseReturned(
                .with {
                    $0.leaseID = 4
                    $0.running = [
                        .with {
                            $0.claimID = 12
                            $0.coordinatorID = 3
                            $0.purpose = "scan"
                            $0.items = [.with { $0.path = bytes("/home/u/d/a") }]
                            $0.held = true
                        }
                    ]
                }
            )
        ),
        Filecoord_V1_Frame(
            .leaseGranted(
                .with {
                    $0.leaseID = 4
                    $0.subtree = bytes("/home/u/d")
                }
            )
        ),
        Filecoord_V1_Frame(.leaseRecalled(.with { $0.leaseID = 4 })),
    ]

    /// Every message name of filecoord.proto's `Frame.payload`.
    static let messageNames: Set<String> = [
        "Hello", "RegisterPresenter", "UnregisterPresenter", "PresenterURLChanged", "RequestClaim", "FinishClaim",
        "CancelCoordinator", "CancelClaim", "PresenterReply", "ItemMoved", "VersionChanged", "DumpRequest",
        "HelloReply", "Refused", "Granted", "ClaimFailed", "PresenterMessage", "ProtocolError", "DumpReply",
        "VersionStoreRequest", "VersionStoreReply", "LeaseReturned", "LeaseGranted", "LeaseRecalled",
    ]

    static let client = ClientID(3)

    /// Everything a client sends (claims and messages), in its own terms.
    static let sent: [ClientSent] = [
        .message(.addPresenter(PresenterRegistration(id: PresenterID(1), client: client, path: path("/d/a.txt")))),
        .message(
            .addPresenter(
                PresenterRegistration(
                    id: PresenterID(2),
                    client: client,
                    path: nil,
                    callbacks: [.relinquishToWriter, .presentedItemDidMove],
                    isPackage: true,
                    serialQueue: 0x7f00_1234_5678
                )
            )
        ),
        .message(.removePresenter(PresenterID(2))),
        .message(.presenterURLChanged(PresenterID(1), to: path("/d/b.txt"))),
        .message(.presenterURLChanged(PresenterID(1), to: nil)),
        .claim(
            ClaimRequest(
                id: ClaimID(5),
                client: client,
                coordinator: CoordinatorID(6),
                purpose: PurposeID("p"),
                items: [ClaimItem(path: path("/d/a.txt"), access: .read([]))]
            )
        ),
        .claim(
            ClaimRequest(
                id: ClaimID(0),
                client: client,
                coordinator: CoordinatorID(0),
                purpose: PurposeID(""),
                filePresenter: PresenterID(0),
                fromPresenterQueue: PresenterID(UInt64.max),
                fromCallback: .presentedSubitemDidResolveConflictVersion,
                items: [
                    ClaimItem(path: path("/d"), access: .write([.forDeleting, .forMerging])),
                    ClaimItem(path: path("/"), access: .read([.withoutChanges, .forUploading])),
                    ClaimItem(path: path("/e/f"), access: .write([])),
                ],
                isPreparation: true,
                timeout: .milliseconds(1_500)
            )
        ),
        .message(.finishClaim(ClaimID(5), created: [])),
        .message(.finishClaim(ClaimID(5), created: [path("/d/x"), path("/d/y")])),
        // Issue 37: what a write left behind.
        .message(
            .finishClaim(
                ClaimID(5),
                created: [path("/d/y")],
                outcome: WriteOutcome(
                    endedAt: 1_764_300_000_123_456_789,
                    items: [
                        path("/d/x"): .present(inode: 42, size: 7, changeTime: 1_764_300_000_100_000_000),
                        path("/d/y"): .absent,
                    ]
                )
            )
        ),
        .message(.cancelCoordinator(CoordinatorID(6), of: client)),
        .message(.cancelClaim(ClaimID(5))),
        .message(.presenterReplied(RequestID(1), .relinquished(reacquirer: true))),
        .message(.presenterReplied(RequestID(2), .relinquished(reacquirer: false))),
        .message(.presenterReplied(RequestID(3), .succeeded)),
        .message(.presenterReplied(RequestID(4), .failed(PresenterError(domain: "D", code: -1, message: "m")))),
        .message(.itemMoved(ClaimID(5), from: path("/d/a"), to: path("/e/a"), fromName: nil)),
        .message(.itemMoved(ClaimID(5), from: path("/d/a"), to: path("/d/a"), fromName: Array("A".utf8))),
        .message(.versionChanged(ClaimID(5), path("/d/a"), .added(VersionID("v1")))),
        .message(.versionChanged(ClaimID(5), path("/d/a"), .removed(VersionID("v2")))),
        .message(.versionChanged(ClaimID(5), path("/d/a"), .resolved(VersionID("v3")))),
        .message(.returnLease(LeaseID(4), running: [])),
        .message(
            .returnLease(
                LeaseID(4),
                running: [
                    {
                        var request = ClaimRequest(
                            id: ClaimID(12),
                            client: client,
                            coordinator: CoordinatorID(3),
                            purpose: PurposeID("scan"),
                            items: [ClaimItem(path: path("/d/a"), access: .write([]))]
                        )
                        request.isHeld = true
                        return request
                    }()
                ]
            )
        ),
    ]

    /// Every presenter message kind, with its arguments.
    static let messageKinds: [PresenterMessageKind] = [
        .relinquishToReader, .relinquishToWriter, .savePresentedItemChanges, .accommodatePresentedItemDeletion,
        .accommodatePresentedSubitemDeletion(at: path("/d/p.pkg/x")), .reacquire(relinquish: RequestID(77)),
        .presentedItemDidChange, .presentedItemDidMove(to: path("/e/a")), .presentedSubitemDidChange(at: path("/d/x")),
        .presentedSubitemDidAppear(at: path("/d/y")), .presentedSubitemDidMove(from: path("/d/a"), to: path("/d/b")),
        .presentedItemVersion(.added(VersionID("a"))), .presentedItemVersion(.removed(VersionID("b"))),
        .presentedItemVersion(.resolved(VersionID("c"))),
        .presentedSubitemVersion(at: path("/d/z"), .added(VersionID("d"))),
        .presentedSubitemVersion(at: path("/d/z"), .removed(VersionID("e"))),
        .presentedSubitemVersion(at: path("/d/z"), .resolved(VersionID("f"))),
    ]

    /// Every arbiter effect addressed to a client, in FCCore's terms.
    static let effects: [ArbiterEffect] =
        [
            .grant(ClaimID(5), client: client, paths: [path("/d/a"), path("/d/b")]),
            .grant(ClaimID(6), client: client, paths: []),
            .fail(ClaimID(5), client: client, .cancelled),
            .fail(
                ClaimID(5),
                client: client,
                .presenterError(
                    PresenterError(domain: "NSCocoaErrorDomain", code: 4, message: "gone"),
                    presenter: PresenterID(0)
                )
            ),
            .fail(ClaimID(5), client: client, .invalidRequest("a claim needs at least one item")),
            .fail(ClaimID(5), client: client, .deadlock("claim#5 waits for claim#6, which waits for claim#5")),
            .fail(ClaimID(5), client: client, .timedOut("claim#5 was not granted within its timeout of 2.000 s")),
        ]
        + messageKinds.enumerated().map { index, kind in
            .message(
                PresenterMessage(
                    presenter: PresenterID(UInt64(index)),
                    client: client,
                    request: kind.needsReply ? RequestID(UInt64(100 + index)) : nil,
                    claim: index.isMultiple(of: 2) ? ClaimID(UInt64(index)) : nil,
                    kind: kind
                )
            )
        }
}

/// What a client sends: a claim, or one of its messages.
enum ClientSent: Sendable, CustomTestStringConvertible {
    case claim(ClaimRequest)
    case message(ClientMessage)

    /// The frame the client writes.
    var frame: Filecoord_V1_Frame {
        switch self {
        case .claim(let request): Filecoord_V1_Frame(claim: request)
        case .message(let message): Filecoord_V1_Frame(message)
        }
    }

    /// The event the daemon reads from it on the connection of client `client`.
    func event(from client: ClientID) -> ArbiterEvent {
        switch self {
        case .claim(let request): .claimRequested(request)
        case .message(let message): message.event(from: client)
        }
    }

    var testDescription: String {
        switch self {
        case .claim(let request): "claim \(request.id.rawValue)"
        case .message(let message): "\(message)".prefix(80).description
        }
    }
}
