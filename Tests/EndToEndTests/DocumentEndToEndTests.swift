// CoordinatedDocument across real processes (issue 27): two documents in two fc-testhost processes on one file, and
// other processes reading, writing, moving, deleting and adding conflict versions around them. Each document prints
// its events (`doc NAME EVENT`, Sources/fc-testhost/DocumentCommands.swift).

import FCSystem
import Foundation
import Testing

@Suite struct DocumentEndToEndTests {
    /// A daemon serving the test's own version store, and hosts that name it.
    private func start(_ env: TestEnvironment, _ names: [String]) async throws -> [HostProcess] {
        _ = try await env.startDaemon(arguments: ["--versions-directory", env.path("versions")])
        var hosts: [HostProcess] = []
        for name in names {
            hosts.append(try await env.host(name, environment: ["FILECOORD_VERSIONS_DIR": env.path("versions")]))
        }
        return hosts
    }

    private func contents(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? "<missing>"
    }

    @Test("A save in one process is read by the document in the other, which saw the writer at work")
    func twoDocumentsInTwoProcesses() async throws {
        try await TestEnvironment.run { env in
            let path = try env.file("notes.txt", "first")
            let hosts = try await start(env, ["A", "B"])
            let (a, b) = (hosts[0], hosts[1])
            try a.send("doc A \(path)")
            try await a.waitFor("doc A opened first")
            try b.send("doc B \(path)")
            try await b.waitFor("doc B opened first")

            try a.send("doc-edit A from A")
            try await a.waitFor("done doc-edit A unsaved=true")
            try a.send("doc-save A")
            try await a.waitFor("done doc-save A")
            #expect(contents(path) == "from A")
            try await b.waitFor("doc B others readers=0 writers=1")
            try await b.waitFor("doc B others readers=0 writers=0")
            try await b.waitFor("doc B reloaded from A")

            // And back: B's edit reaches A.
            try b.send("doc-edit B from B")
            try b.send("doc-save B")
            try await a.waitFor("doc A reloaded from B")
            try a.send("doc-text A")
            try await a.waitFor("doc A text from B unsaved=false")
        }
    }

    @Test("A document saves its unsaved changes when another process reads the file")
    func savesWhenAnotherProcessReads() async throws {
        try await TestEnvironment.run { env in
            let path = try env.file("notes.txt", "on disk")
            let hosts = try await start(env, ["A", "reader"])
            let (a, reader) = (hosts[0], hosts[1])
            try a.send("doc A \(path)")
            try await a.waitFor("doc A opened on disk")
            try a.send("doc-edit A typed but unsaved")
            try await a.waitFor("done doc-edit A unsaved=true")

            try reader.send("read \(path)")
            try await reader.waitFor("done read \(path) typed but unsaved")
            try await a.waitFor("doc A saved")
            try a.send("doc-text A")
            try await a.waitFor("doc A text typed but unsaved unsaved=false")
        }
    }

    @Test("Autosave writes the edit after its delay, through a coordinated write the other document sees")
    func autosave() async throws {
        try await TestEnvironment.run { env in
            let path = try env.file("notes.txt", "before")
            let hosts = try await start(env, ["A", "B"])
            let (a, b) = (hosts[0], hosts[1])
            try a.send("doc A \(path) autosave 100")
            try await a.waitFor("doc A opened before")
            try b.send("doc B \(path)")
            try await b.waitFor("doc B opened before")
            try a.send("doc-edit A autosaved")
            try await a.waitFor("doc A saved")
            #expect(contents(path) == "autosaved")
            try await b.waitFor("doc B reloaded autosaved")
        }
    }

    @Test("A document follows a coordinated move and saves at the new place")
    func followsMove() async throws {
        try await TestEnvironment.run { env in
            let path = try env.file("notes.txt", "text")
            let moved = env.path("renamed.txt")
            let hosts = try await start(env, ["A", "mover"])
            let (a, mover) = (hosts[0], hosts[1])
            try a.send("doc A \(path)")
            try await a.waitFor("doc A opened text")
            try mover.send("move \(path) \(moved)")
            try await mover.waitFor("done move \(path)")
            try await a.waitFor("doc A moved \(moved)")
            try a.send("doc-edit A after the move")
            try a.send("doc-save A")
            try await a.waitFor("done doc-save A")
            #expect(contents(moved) == "after the move")
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test("A coordinated delete closes the document")
    func closesOnCoordinatedDelete() async throws {
        try await TestEnvironment.run { env in
            let path = try env.file("notes.txt", "text")
            let hosts = try await start(env, ["A", "deleter"])
            let (a, deleter) = (hosts[0], hosts[1])
            try a.send("doc A \(path)")
            try await a.waitFor("doc A opened text")
            try deleter.send("write \(path) deleting")
            try await deleter.waitFor("done write \(path)")
            try await a.waitFor("doc A closed deleted")
            try await a.waitFor("doc A events finished")
            try a.send("doc-save A")
            try await a.waitFor("failed doc-save A The document is closed.")
        }
    }

    @Test("Changes made without coordination reach the document through the watcher: a reload, then a close")
    func uncoordinatedChangeAndDelete() async throws {
        try await TestEnvironment.run { env in
            let path = try env.file("notes.txt", "text")
            let hosts = try await start(env, ["A"])
            let a = hosts[0]
            try a.send("doc A \(path)")
            try await a.waitFor("doc A opened text")
            // The daemon adds its watch on its watcher's thread, after the registration: wait for it.
            try await env.waitForWatches(env.directory)
            try FileSystemCalls.writeFile(path, Array("changed by another editor".utf8))
            try await a.waitFor("doc A reloaded changed by another editor")

            // With unsaved changes the document keeps them and says the file changed.
            try a.send("doc-edit A mine")
            try await a.waitFor("done doc-edit A unsaved=true")
            try FileSystemCalls.writeFile(path, Array("changed again".utf8))
            try await a.waitFor("doc A changedOnDiskWithUnsavedChanges")
            try a.send("doc-text A")
            try await a.waitFor("doc A text mine unsaved=true")
            try a.send("doc-revert A")
            try await a.waitFor("doc A reloaded changed again")

            try FileManager.default.removeItem(atPath: path)
            try await a.waitFor("doc A closed deleted")
        }
    }

    @Test("A sync tool's conflict version reaches the document, which lists it and keeps it when picked")
    func conflictVersionPicked() async throws {
        try await TestEnvironment.run { env in
            let path = try env.file("notes.txt", "mine")
            let theirs = try env.file("theirs.txt", "theirs")
            let hosts = try await start(env, ["A", "B", "sync"])
            let (a, b, sync) = (hosts[0], hosts[1], hosts[2])
            try a.send("doc A \(path)")
            try await a.waitFor("doc A opened mine")
            try b.send("doc B \(path)")
            try await b.waitFor("doc B opened mine")

            try sync.send("add-version \(path) \(theirs) conflict laptop")
            try await sync.waitFor("done add-version \(path) ")
            try await a.waitFor("doc A conflicts 1")
            try a.send("doc-conflicts A")
            try await a.waitFor("doc A conflictVersions 1 laptop")

            try a.send("doc-pick A 0")
            try await a.waitFor("done doc-pick A")
            try await a.waitFor("doc A reloaded theirs")
            #expect(contents(path) == "theirs")
            try await b.waitFor("doc B reloaded theirs")
            try b.send("doc-conflicts B")
            try await b.waitFor("doc B conflictVersions 0 ")
        }
    }
}
