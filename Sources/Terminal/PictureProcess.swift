import Glibc
import Synchronization

/// Pictures are decoded in a child process of this program (`seance --decode-picture`): the
/// kernel bounds its memory and time, a decoder's bug ends there rather than in the shell that
/// holds the user's keys, and the shell receives only the small picture it draws. Its peak
/// memory stays that of the picture's bytes, whatever the picture decodes to.
///
/// The child reads the box to fit (two big-endian 32-bit numbers) and the picture on standard
/// input, and writes `P`, the size it chose (the same two numbers) and its RGBA pixels, or `E`
/// and why it could not, on standard output.
package enum PictureProcess {
    /// The flag the executable answers by serving one picture.
    package static let flag = "--decode-picture"

    /// The program run to decode (this one), once the executable says so: tests that link the
    /// libraries decode in their own process.
    private static let program = Mutex<String?>(nil)

    /// What the child may use: enough for the budget's largest picture and the decoder's
    /// copies of it, and a few seconds.
    static let addressSpace: rlim_t = 1 << 30
    static let cpuSeconds: rlim_t = 10

    /// Decodes in a child process from now on, running `path` (the executable itself).
    package static func use(program path: String) { program.withLock { $0 = path } }

    /// `bytes` decoded and scaled down to fit `width` × `height` pixels, its aspect kept (never
    /// scaled up): checked against the budget here first, so nothing over it is handed on.
    package static func fitted(_ bytes: [UInt8], width: Int, height: Int) throws(ImageError) -> RGBAImage {
        try ImageDecoder.check(bytes)
        guard let program = program.withLock({ $0 }) else { return try fit(bytes, width: width, height: height) }
        return try decode(bytes, width: width, height: height, running: program)
    }

    /// Decodes and scales in this process.
    static func fit(_ bytes: [UInt8], width: Int, height: Int) throws(ImageError) -> RGBAImage {
        let image = try ImageDecoder.decode(bytes)
        let scale = min(1, Double(max(1, width)) / Double(image.width), Double(max(1, height)) / Double(image.height))
        guard scale < 1 else { return image }
        return image.scaled(width: max(1, Int((Double(image.width) * scale).rounded())),
                            height: max(1, Int((Double(image.height) * scale).rounded())))
    }

    // MARK: The parent's side

    private static func decode(_ bytes: [UInt8], width: Int, height: Int, running program: String) throws(ImageError) -> RGBAImage {
        func failed(_ reason: String) -> ImageError { .notAnImage(reason: reason) }
        // The picture goes in a temporary file (unlinked at once), not a pipe: the child may die
        // before reading it, and a write to a pipe nobody reads would end this shell (a
        // script's SIGPIPE).
        guard let file = tmpfile() else { throw failed("cannot decode it here (\(String(cString: strerror(errno))))") }
        defer { fclose(file) }
        let input = fileno(file)
        var request = bigEndian(UInt32(clamping: width)) + bigEndian(UInt32(clamping: height))
        request += bytes
        guard writeAll(input, request), lseek(input, 0, SEEK_SET) == 0 else { throw failed("cannot decode it here") }
        var output: [Int32] = [0, 0]
        guard pipe(&output) == 0 else { throw failed("cannot decode it here") }
        _ = fcntl(output[0], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input, 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let arguments = [program, flag]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var environment: [UnsafeMutablePointer<CChar>?] = [nil]
        let spawned = posix_spawn(&pid, program, &actions, nil, &argv, &environment)
        close(output[1])
        defer { close(output[0]) }
        guard spawned == 0 else { throw failed("cannot decode it here (\(String(cString: strerror(spawned))))") }
        // At most the pixels of the box and their size (or a reason).
        let limit = 9 + max(1, width) * max(1, height) * 4
        let reply = readAll(output[0], limit: limit)
        // More than it may say: it is stopped, not waited for.
        if reply.count >= limit { kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard let kind = reply.first else { throw failed("its decoding stopped (over the memory or time a picture may take)") }
        if kind == UInt8(ascii: "E") { throw failed(String(decoding: reply.dropFirst().prefix(200), as: UTF8.self)) }
        guard kind == UInt8(ascii: "P"), reply.count >= 9 else { throw failed("its decoding stopped") }
        let chosenWidth = Int(number(reply, at: 1)), chosenHeight = Int(number(reply, at: 5))
        guard (1...max(1, width)).contains(chosenWidth), (1...max(1, height)).contains(chosenHeight),
              reply.count == 9 + chosenWidth * chosenHeight * 4 else { throw failed("its decoding stopped") }
        return RGBAImage(width: chosenWidth, height: chosenHeight, pixels: Array(reply[9...]))
    }

    // MARK: The child's side

    /// Serves one picture on standard input and output; the exit status.
    package static func serve() -> Int32 {
        // Nothing of the parent's but the picture and the reply's pipe (sockets, the database:
        // whatever it had open without close-on-exec) stays here.
        for fd in 3..<Int32(min(sysconf(Int32(_SC_OPEN_MAX)), 1 << 16)) { close(fd) }
        var limit = rlimit(rlim_cur: addressSpace, rlim_max: addressSpace)
        setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit)
        limit = rlimit(rlim_cur: cpuSeconds, rlim_max: cpuSeconds)
        setrlimit(__rlimit_resource_t(RLIMIT_CPU.rawValue), &limit)
        let request = readAll(0, limit: 8 + FileContents.defaultLimit)
        guard request.count >= 8 else { return 2 }
        let width = Int(number(request, at: 0)), height = Int(number(request, at: 4))
        let reply: [UInt8]
        do {
            let image = try fit(Array(request[8...]), width: width, height: height)
            reply = [UInt8(ascii: "P")] + bigEndian(UInt32(image.width)) + bigEndian(UInt32(image.height)) + image.pixels
        } catch {
            reply = [UInt8(ascii: "E")] + Array(error.description.utf8)
        }
        return writeAll(1, reply) ? 0 : 1
    }

    // MARK: Bytes

    private static func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }

    private static func number(_ bytes: [UInt8], at index: Int) -> UInt32 {
        bytes[index..<(index + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            written += n
        }
        return true
    }

    /// Everything until the end, or up to `limit` bytes (more is left unread).
    private static func readAll(_ fd: Int32, limit: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < limit {
            let n = read(fd, &chunk, min(chunk.count, limit - bytes.count))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }
}
