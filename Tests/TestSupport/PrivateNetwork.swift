import Foundation
import Glibc

/// A network namespace of one test's own whose only interface is loopback (multicast routed to
/// it, as `scripts/in-netns` makes the suite's): seance's default group and port are private to
/// the test, so no test hears another's shells and none needs a port of its own. Programs run in
/// it through `launcher`; sockets the test opens itself are opened `inside` it. Made inside the
/// suite's own namespace (`make test`), so nothing in it can reach a real interface; removed when
/// the last reference goes.
package final class PrivateNetwork: @unchecked Sendable {
    // Safe to send: every stored property is a constant.
    package let name: String

    package struct SetupError: Error, CustomStringConvertible {
        package let output: String
        package var description: String { "could not make the test's network namespace: \(output)" }
    }

    package init() throws {
        name = "seance-p" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let (status, output) = Self.run("""
            set -e
            ip netns add \(name)
            ip -n \(name) link set lo up
            ip -n \(name) link set lo multicast on
            ip -n \(name) route add 224.0.0.0/4 dev lo
            """)
        guard status == 0 else {
            _ = Self.run("ip netns del \(name) 2>/dev/null")
            throw SetupError(output: output)
        }
    }

    deinit { _ = Self.run("ip netns del \(name) 2>/dev/null") }

    /// What runs a program in this namespace: put before its path and arguments.
    package var launcher: [String] { ["/usr/sbin/ip", "netns", "exec", name] }

    /// Runs `body` with the calling thread in this namespace, and back in its own afterwards:
    /// the sockets `body` opens (and the threads it starts) belong here for good, whichever
    /// thread uses them later. `setns` moves only the calling thread, and `body` runs to its end
    /// on it, so nothing else runs there meanwhile.
    package func inside<T>(_ body: () throws -> T) throws -> T { try Self.inside(name, body) }

    /// Runs `body` with the calling thread in the namespace called `name` (made by `ip netns
    /// add`: this network, or a test host), and back in its own afterwards.
    package static func inside<T>(_ name: String, _ body: () throws -> T) throws -> T {
        let own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        let target = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
        defer {
            close(own)
            close(target)
        }
        guard own >= 0, target >= 0, setns(target, newNetwork) == 0 else {
            throw SetupError(output: "cannot enter \(name): \(String(cString: strerror(errno)))")
        }
        defer { precondition(setns(own, newNetwork) == 0, "the test's thread could not leave \(name)") }
        return try body()
    }

    /// glibc's `setns(2)`, which its Swift module does not show (it is `_GNU_SOURCE` only), and
    /// the flag for a network namespace (`CLONE_NEWNET`, from linux/sched.h).
    private static let setns = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns")!,
                                             to: (@convention(c) (Int32, Int32) -> Int32).self)
    private static let newNetwork: Int32 = 0x4000_0000

    /// Runs a shell script; its status and everything it printed.
    @discardableResult
    static func run(_ script: String) -> (status: Int32, output: String) {
        guard let child = try? Child(["/bin/sh", "-c", "exec 2>&1\n" + script], stdout: .pipe) else { return (-1, "cannot run /bin/sh") }
        let data = child.output!.readDataToEndOfFile()
        return (child.wait(timeout: 60).status ?? -1, String(decoding: data, as: UTF8.self))
    }
}

/// True when the suite runs in a namespace of its own (`scripts/in-netns`, as `make test` runs
/// it), where making namespaces and opening sockets is safe.
package var inPrivateNetwork: Bool { ProcessInfo.processInfo.environment["SEANCE_IN_NETNS"] == "1" }
