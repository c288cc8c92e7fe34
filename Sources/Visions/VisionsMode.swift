import Glibc
import Shell
import Storage
import Terminal

/// The visions mode: two pages (the visions and the rescuers), like a page view controller.
package final class VisionsMode {
    enum Page: Int {
        case visions = 1, rescuers = 2
    }

    private var page = Page.visions
    private var listPage = 1
    /// The vision `save` applies to: the one opened last.
    private var openVision: Int64?
    /// Visions a list page holds in a script (at a terminal, as many as the window does).
    static let pageSize = 10

    package init() {}

    package func register(in shell: Shell) {
        shell.register(Mode(
            name: "visions", summary: "Will's visions and his rescuers",
            prompt: { self.page == .visions ? "visions" : "visions/rescuers" },
            enter: { shell in try self.showList(shell) }))

        shell.register(mode: "visions", "next", summary: "the next page (visions → rescuers)") { shell, _ in try self.turn(to: .rescuers, shell) }
        shell.register(mode: "visions", "prev", summary: "the previous page (rescuers → visions)") { shell, _ in try self.turn(to: .visions, shell) }
        shell.register(mode: "visions", "page", arguments: [.positional("number", .choice([Candidate("1", "visions"), Candidate("2", "rescuers")]))],
                summary: "go to page 1 (visions) or 2 (rescuers)") { shell, arguments in
            guard let number = try arguments.integer("number"), let page = Page(rawValue: number) else {
                throw UserError("there are two pages: 1 (visions) and 2 (rescuers)")
            }
            try self.turn(to: page, shell)
        }
        shell.register(mode: "visions", "list", arguments: [.positional("page", .integer, optional: true, help: "which page of the list")],
                summary: "show the list of this page") { shell, arguments in
            if let number = try arguments.integer("page") {
                guard number >= 1 else { throw UserError("list pages start at 1") }
                self.listPage = number
            }
            try self.showList(shell)
        }
        let rescuerNames = { [unowned shell] () -> [Candidate] in
            (try? VisionStore(database: shell.session.openDatabase()).rescuers().map { Candidate($0.name, "rescues: \($0.rescues)") }) ?? []
        }
        let visionNumbers = { [unowned shell] () -> [Candidate] in
            (try? VisionStore(database: shell.session.openDatabase()).visionNumbers().map {
                Candidate(String($0.id), SafeText.visible($0.rescuer) + ($0.rescued ? ", rescued" : ""))
            }) ?? []
        }
        let names = ArgumentKind.dynamic(rescuerNames)
        shell.register(mode: "visions", "add", arguments: [.positional("name", names, optional: true, help: "who is assigned to save Will"),
                                          .option("--image", "path", .path, help: "a PNG, JPEG, GIF or BMP file"),
                                          .switch("--new-rescuer", help: "create the rescuer if nobody has that name")],
                summary: "add a vision (asks for the rescuer and the image)",
                details: "At a terminal, missing fields are asked for, with Tab completion, and a new name is confirmed.\n"
                    + "In a batch, give both: add NAME --image PATH; a name nobody has is an error unless --new-rescuer.") { shell, arguments in
            try self.add(name: arguments["name"], path: arguments["path"], createsRescuer: arguments.isSet("--new-rescuer"), shell)
        }
        let rescuerActions = [Candidate("rename", "give a rescuer another name: rename NAME NEW"),
                              Candidate("delete", "delete a rescuer no vision names"),
                              Candidate("portrait", "give a rescuer a portrait: portrait NAME PATH"),
                              Candidate("describe", "give a rescuer a description: describe NAME TEXT")]
        shell.register(mode: "visions", "rescuer",
                       arguments: [.positional("action", .choice(rescuerActions), help: "rename, delete, portrait or describe"),
                                   .positional("name", names, help: "the rescuer (quote a name with spaces)"),
                                   .positional("value", .text, optional: true, rest: true, help: "the new name, the image file or the description")],
                       summary: "rename, delete, or give a portrait or description to a rescuer") { shell, arguments in
            try self.changeRescuer(arguments["action"]!, arguments["name"]!, arguments["value"], shell)
        }
        let numbers = ArgumentKind.dynamic(visionNumbers)
        let numbersAndNames = ArgumentKind.dynamic { visionNumbers() + rescuerNames() }
        shell.register(mode: "visions", "open", arguments: [.positional("N|NAME", numbersAndNames, help: "a vision number, or a rescuer's name")],
                summary: "show vision N, or rescuer NAME") { shell, arguments in
            try self.open(arguments["N|NAME"]!, shell)
        }
        shell.register(mode: "visions", "save", arguments: [.positional("name", names, optional: true, rest: true, help: "who is rescuing Will")],
                summary: "rescue the open vision: name its rescuer") { shell, arguments in
            try self.save(arguments["name"], shell)
        }
        shell.register(mode: "visions", "delete", arguments: [.positional("number", numbers, help: "the vision's number")],
                summary: "delete vision N (asks first at a terminal)") { shell, arguments in
            try self.delete(try arguments.integer("number")!, shell)
        }
    }

    private func store(_ shell: Shell) throws -> VisionStore { VisionStore(database: try shell.session.openDatabase()) }

    private func view(_ shell: Shell) -> VisionsView {
        VisionsView(capabilities: shell.capabilities, columns: shell.console.columns, rows: shell.console.rows)
    }

    // MARK: Pages

    private func turn(to page: Page, _ shell: Shell) throws {
        if page != self.page { listPage = 1 }
        self.page = page
        try showList(shell)
    }

    private func showList(_ shell: Shell) throws {
        let store = try store(shell)
        switch page {
        case .visions:
            // At a terminal a page is what the window holds; a script's pages stay the same
            // whatever the window it runs beside.
            let pages: [Range<Int>]
            if shell.capabilities.interactive {
                pages = VisionsView.pages(entryRows: try store.thumbnailHeights().map(VisionsView.entryRows), rows: shell.console.rows)
            } else {
                let total = try store.visionCount()
                pages = stride(from: 0, to: total, by: Self.pageSize).map { $0..<min(total, $0 + Self.pageSize) }
            }
            let pageCount = max(1, pages.count)
            listPage = min(listPage, pageCount)
            let range = pages.isEmpty ? 0..<0 : pages[listPage - 1]
            let visions = try store.visions(offset: range.lowerBound, limit: range.count)
            shell.console.print(view(shell).visionList(visions, total: pages.last?.upperBound ?? 0, page: listPage, pageCount: pageCount))
        case .rescuers:
            shell.console.print(view(shell).rescuerList(try store.rescuers()))
        }
    }

    // MARK: Records

    private func add(name givenName: String?, path givenPath: String?, createsRescuer: Bool, _ shell: Shell) throws {
        let store = try store(shell)
        let known = (try? store.rescuers().map { Candidate($0.name) }) ?? []
        let name = try VisionStore.normalise(givenName ?? shell.ask("Rescuer:", field: "rescuer name", completions: { _ in known }))
        if try store.rescuer(named: name) == nil && !createsRescuer {
            // A script's typo must not make a second Joyce; a person at a terminal is asked.
            guard shell.isInteractive else { throw VisionsError.newRescuerNotAllowed(name, similar: try store.similarRescuer(to: name)) }
            let meant = try store.similarRescuer(to: name).map { " (did you mean \($0)?)" } ?? ""
            let answer = try shell.ask("No rescuer is called \(name) yet\(meant). Create one? [y/N]", field: Shell.confirmation)
            // Declining is an answer, not an error.
            guard answer.lowercased().hasPrefix("y") else { return shell.console.print("nothing added") }
        }
        let (bytes, image) = try askedImage(givenPath, shell)
        let id = try store.addVision(rescuerName: name, imageBytes: bytes, image: image, now: shell.session.clock())
        shell.console.print("added vision #\(id), assigned to \(try store.rescuer(named: name)?.name ?? name)")
    }

    /// The image at `givenPath`, read and decoded. At a terminal a path missing or bad is asked
    /// (again) rather than ending the form; in a script a bad one is an error.
    private func askedImage(_ givenPath: String?, _ shell: Shell) throws -> ([UInt8], RGBAImage) {
        var path = givenPath
        while true {
            let current = try path ?? shell.ask("Image file:", field: "--image PATH", completions: { PathCompletion.candidates(for: $0) })
            do {
                return try Self.image(at: current)
            } catch {
                guard shell.isInteractive else { throw error }
                shell.console.error(shell.styler.error("error:") + " \(error); try another (Ctrl-C to stop)")
                path = nil
            }
        }
    }

    private static func image(at path: String) throws -> ([UInt8], RGBAImage) {
        let expanded = path.hasPrefix("~/") ? (getenv("HOME").map { String(cString: $0) } ?? "") + path.dropFirst() : path
        let bytes = try ImageDecoder.readFile(expanded)
        do { return (bytes, try ImageDecoder.decode(bytes)) } catch { throw UserError("\(path): \(error)") }
    }

    /// `rescuer rename|delete|portrait|describe NAME [VALUE]`.
    private func changeRescuer(_ action: String, _ name: String, _ value: String?, _ shell: Shell) throws {
        let store = try store(shell)
        guard let rescuer = try store.rescuer(named: name) else { throw VisionsError.noSuchRescuer(name) }
        let shown = SafeText.visible(rescuer.name)
        func needed(_ what: String, _ usage: String) throws -> String {
            guard let value, !value.isEmpty else { throw UserError("rescuer \(action) needs \(what): rescuer \(action) NAME \(usage)") }
            return value
        }
        switch action {
        case "rename":
            try store.renameRescuer(rescuer.name, to: try needed("a new name", "NEW"))
            shell.console.print("\(shown) is now \(SafeText.visible(try VisionStore.normalise(value!)))")
        case "delete":
            guard value == nil else { throw UserError("unexpected argument '\(SafeText.visible(value!))' (rescuer delete NAME)") }
            if shell.isInteractive {
                // What would refuse it is said before the question, not after the answer.
                try store.checkDeletable(rescuer.name)
                let answer = try shell.ask("Delete rescuer \(shown)? [y/N]", field: Shell.confirmation)
                guard answer.lowercased().hasPrefix("y") else { return shell.console.print("nothing deleted") }
            }
            try store.deleteRescuer(rescuer.name)
            shell.console.print("deleted rescuer \(shown)")
        case "portrait":
            let (bytes, _) = try askedImage(try needed("an image file", "PATH"), shell)
            try store.setPortrait(rescuer.name, imageBytes: bytes)
            shell.console.print("\(shown) has a new portrait (open \(shown) shows it)")
        case "describe":
            try store.describeRescuer(rescuer.name, as: try needed("a description", "TEXT"))
            shell.console.print("\(shown) is described")
        default:
            throw UserError("unknown rescuer action '\(SafeText.visible(action))': rename, delete, portrait or describe")
        }
    }

    private func open(_ what: String, _ shell: Shell) throws {
        let store = try store(shell)
        if let number = Int64(what.hasPrefix("#") ? String(what.dropFirst()) : what) {
            let vision = try store.vision(number)
            openVision = vision.id
            // A rescued vision keeps its RESCUED stamp.
            shell.console.print(view(shell).vision(vision, stamped: vision.rescued))
            return
        }
        guard let rescuer = try store.rescuer(named: what.trimmingCharacters(in: .whitespaces)) else {
            throw VisionsError.noSuchRescuer(what)
        }
        shell.console.print(view(shell).rescuer(rescuer))
    }

    private func save(_ given: String?, _ shell: Shell) throws {
        guard let id = openVision else { throw VisionsError.nothingOpen }
        let store = try store(shell)
        let vision = try store.vision(id)
        if vision.rescued { throw UserError("vision #\(id) is already rescued, by \(vision.rescuerName)") }
        let names = (try? store.rescuers().map { Candidate($0.name) }) ?? []
        let name = try given ?? shell.ask("Who is rescuing Will?", field: "NAME", completions: { _ in names })
        switch try store.save(id, name: name, now: shell.session.clock()) {
        case .alreadyRescued(let by):
            throw UserError("vision #\(id) is already rescued, by \(by)")
        case .wrongRescuer(let expected):
            throw UserError("Will can only be saved by \(expected)")
        case .rescued(let by):
            if shell.capabilities.interactive { animateStamp(try store.vision(id), shell) }
            shell.console.print("\(by) rescued Will! (vision #\(id))")
        }
    }

    /// The "RESCUED" stamp blinks over the image a few times, then stays.
    private func animateStamp(_ vision: Vision, _ shell: Shell) {
        let view = view(shell)
        let plain = view.vision(vision, stamped: false)
        let stamped = view.vision(vision, stamped: true)
        let height = plain.split(separator: "\n", omittingEmptySubsequences: false).count
        let console = shell.console
        console.print(stamped)
        for frame in 0..<4 {
            console.flush()
            // Ctrl-C skips to the end: the rescue is recorded already, the stamp stays.
            let interrupted = (try? shell.pause(0.14, showNotices: false)) == nil
            console.write("\u{1B}[\(height)A\r\u{1B}[J")
            if interrupted { console.print(stamped); break }
            console.print(frame % 2 == 0 ? plain : stamped)
        }
        console.flush()
    }

    private func delete(_ number: Int, _ shell: Shell) throws {
        let store = try store(shell)
        let id = Int64(number)
        let vision = try store.vision(id)
        if shell.isInteractive {
            let answer = try shell.ask("Delete vision #\(id) (\(vision.rescuerName))? [y/N]", field: Shell.confirmation)
            guard answer.lowercased().hasPrefix("y") else { return shell.console.print("nothing deleted") }
        }
        try store.delete(id)
        if openVision == id { openVision = nil }
        shell.console.print("deleted vision #\(id)")
    }
}
