import Glibc
import Testing
@testable import Shell

/// Lines posted from other threads wake the reader through a pipe: once per batch, not once
/// per line (a burst of messages wrote a byte each), and never leave a line without a wake-up.
@Suite struct AsyncInboxTests {
    private func bytesInPipe(_ inbox: AsyncInbox) -> Int {
        var count: Int32 = 0
        _ = ioctl(inbox.wakeFDs.read, UInt(FIONREAD), &count)
        return Int(count)
    }

    @Test func aBurstWakesOnceAndEveryLineIsKept() {
        let inbox = AsyncInbox()
        for index in 0..<1_000 { inbox.post("line \(index)") }
        #expect(bytesInPipe(inbox) == 1)
        #expect(inbox.drainLines() == (0..<1_000).map { "line \($0)" })
        #expect(bytesInPipe(inbox) == 0)
        inbox.post("after")  // The reader took everything: the next line wakes it again.
        #expect(bytesInPipe(inbox) == 1)
        inbox.clearWake()
        inbox.post("kept")  // A waiter that could not print emptied the pipe: wake again.
        #expect(bytesInPipe(inbox) == 1)
        #expect(inbox.drainLines() == ["after", "kept"])
    }
}
