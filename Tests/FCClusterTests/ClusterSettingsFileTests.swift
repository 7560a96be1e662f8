import FCCluster
import Testing

/// The cluster settings file every daemon reads at start (issue 40): its format and its errors.
@Suite struct ClusterSettingsFileTests {
    @Test func readsEveryKeyCommentsAndBlankLines() throws {
        let file = try ClusterSettingsFile(
            parsing: """
                # the cluster
                cluster-endpoints = http://127.0.0.1:2379,http://127.0.0.1:2380
                host-name=studio-3   # this machine

                cluster-ttl = 6
                shared-folder = /mnt/projects
                shared-folder = home=/net/home
                shared-scan-interval = 2.5
                cluster-listen = 10.0.0.7:7420
                """,
            path: "cluster.conf"
        )
        #expect(file.endpoints == "http://127.0.0.1:2379,http://127.0.0.1:2380")
        #expect(file.hostName == "studio-3")
        #expect(file.ttl == 6)
        #expect(file.sharedFolders == ["/mnt/projects", "home=/net/home"])
        #expect(file.sharedScanInterval == 2.5)
        #expect(file.listen == "10.0.0.7:7420")
    }

    @Test func whereAHostListensForLetters() {
        typealias Listen = ClusterConfiguration.MailListen
        #expect(Listen(parsing: "automatic") == .automatic)
        #expect(Listen(parsing: "off") == .off)
        #expect(Listen(parsing: "127.0.0.1") == .address("127.0.0.1", port: 0))
        #expect(Listen(parsing: "10.0.0.7:7420") == .address("10.0.0.7", port: 7420))
        #expect(Listen(parsing: "[fd00::7]:7420") == .address("fd00::7", port: 7420))
        #expect(Listen(parsing: "fd00::7") == .address("fd00::7", port: 0))
        #expect(Listen(parsing: "[fd00::7]:7420")?.description == "[fd00::7]:7420")
        for bad in [
            "", "host.example", "10.0.0.7:", "10.0.0.7:70000", "[fd00::7", "[fd00::7]x", "1.2.3.4:-1", "0.0.0.0",
            "0.0.0.0:7420", "::", "[::]:7420",
        ] {
            #expect(Listen(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test(arguments: [
        ("cluster-endpoint = x", "unknown key `cluster-endpoint`"),
        ("host-name", "expected `key = value`"),
        ("cluster-ttl = ten", "whole seconds"),
        ("shared-folder =", "has no value"),
        ("shared-scan-interval = 0", "a number of seconds above 0"),
        ("shared-scan-interval = often", "a number of seconds above 0"),
        ("cluster-listen = everywhere", "takes an IP address other hosts reach"),
    ])
    func aBadLineIsNamedWithItsNumber(line: String, reason: String) {
        #expect {
            try ClusterSettingsFile(parsing: "# first\n\(line)\n", path: "cluster.conf")
        } throws: { error in
            let failure = error as? ClusterSettingsFile.Failure
            return failure?.line == 2 && failure?.description.contains(reason) == true
                && failure?.description.hasPrefix("cluster.conf:2: ") == true
        }
    }

    @Test func whereTheFileIs() {
        #expect(ClusterSettingsFile.path(environment: ["FILECOORDD_CLUSTER_CONFIG": "/etc/x.conf"]) == "/etc/x.conf")
        #expect(
            ClusterSettingsFile.path(environment: ["XDG_CONFIG_HOME": "/c", "HOME": "/h"])
                == "/c/filecoordd/cluster.conf"
        )
        #expect(ClusterSettingsFile.path(environment: ["HOME": "/h"]) == "/h/.config/filecoordd/cluster.conf")
        #expect(ClusterSettingsFile.path(environment: [:]) == nil)
    }
}
