// mirror: a folder sync agent built on FileCoordination (issue 27). It mirrors two folders, standing in for two
// devices, through coordinated reads and writes, and prints what it does, one line per action.
//
//   mirror [--other-device NAME] [--verbose] THIS_FOLDER OTHER_FOLDER
//
// THIS_FOLDER is the device the user edits on; OTHER_FOLDER stands for another device (NAME, default "laptop").
// When both sides changed a file since the last sync, this side's text is kept on both and the other's is recorded
// as an NSFileVersion conflict version of this side's file, which an editor (notes, ^K) lists and resolves. It runs
// until standard input closes or reads `exit`. Other commands on standard input: `pause` (changes are queued, not
// mirrored: the two devices are offline), `resume`, and `sync` (prints `mirror: synced` once every change reported so
// far is mirrored).

import FileCoordination
import Foundation

var arguments = Array(CommandLine.arguments.dropFirst())
var otherDevice = "laptop"
if let index = arguments.firstIndex(of: "--other-device"), index + 1 < arguments.count {
    otherDevice = arguments[index + 1]
    arguments.removeSubrange(index...(index + 1))
}
if let index = arguments.firstIndex(of: "--verbose") {
    // Each presenter callback printed as heard (`mirror: heard ...`).
    FolderPresenter.verbose = true
    arguments.remove(at: index)
}
guard arguments.count == 2 else {
    let usage = "usage: mirror [--other-device NAME] [--verbose] THIS_FOLDER OTHER_FOLDER\n"
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}
for folder in arguments {
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
}
let mirror = Mirror(
    this: URL(fileURLWithPath: arguments[0], isDirectory: true),
    other: URL(fileURLWithPath: arguments[1], isDirectory: true),
    otherDevice: otherDevice
)
mirror.start()

Thread {
    while let line = readLine(), line != "exit" {
        switch line {
        case "sync": mirror.queue.async { say("mirror: synced") }
        case "pause": mirror.pause()
        case "resume": mirror.resume()
        default: say("mirror: unknown command \(line)")
        }
    }
    mirror.resume()
    mirror.queue.sync { mirror.stop() }
    exit(0)
}
.start()

dispatchMain()
