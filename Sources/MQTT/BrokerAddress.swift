/// Where the broker is: `mqtt://[USER[:PASS]@]HOST[:PORT]`, or `mqtts://…` for TLS.
package struct BrokerAddress: Equatable, Sendable, CustomStringConvertible {
    package var tls: Bool
    package var user: String?
    package var password: String?
    package var host: String
    package var port: Int

    package struct Invalid: Error, Equatable, CustomStringConvertible {
        package let description: String
    }

    /// Reads a broker URL; a percent-escape in the user or password (`%40` for `@`) is decoded.
    package init(parsing text: String) throws(Invalid) {
        let scheme: String
        var rest: Substring
        if let range = text.range(of: "://") {
            scheme = text[..<range.lowerBound].lowercased()
            rest = text[range.upperBound...]
        } else {
            throw Invalid(description: "a broker is given as mqtt://HOST[:PORT] or mqtts://HOST[:PORT], not '\(Self.masked(text))'")
        }
        switch scheme {
        case "mqtt": tls = false
        case "mqtts": tls = true
        default: throw Invalid(description: "the broker's scheme must be mqtt or mqtts, not '\(scheme)'")
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#") else {
            throw Invalid(description: "a broker URL has no path: \(Self.masked(text))")
        }
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            user = try Self.decode(parts[0])
            password = parts.count > 1 ? try Self.decode(parts[1]) : nil
            guard !(user ?? "").isEmpty else { throw Invalid(description: "the broker's user name is empty") }
        }
        // The host, in brackets when it is an IPv6 address, then an optional port.
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw Invalid(description: "unclosed '[' in the broker's host") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Invalid(description: "unexpected '\(after)' after the broker's host") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
        } else {
            host = String(rest)
        }
        // A name or an IPv4 address; in brackets, an IPv6 address (hex digits, colons, dots).
        let bracketed = rest.hasPrefix("[")
        let allowed: (Unicode.Scalar) -> Bool = bracketed
            ? { $0.properties.isASCIIHexDigit || $0 == ":" || $0 == "." }
            : { $0.value > 0x20 && $0.value < 0x7F && !"[]:@/?#%".unicodeScalars.contains($0) }
        guard !host.isEmpty, host.utf8.count <= 253, host.unicodeScalars.allSatisfy(allowed) else {
            throw Invalid(description: "the broker's host is missing or not a host name: \(Self.masked(text))")
        }
        if let portText {
            guard let value = Int(portText), (1...65_535).contains(value) else {
                throw Invalid(description: "the broker's port must be from 1 to 65535, not '\(portText)'")
            }
            port = value
        } else {
            port = tls ? 8883 : 1883
        }
    }

    /// The URL as it may be shown: the password, if any, as `***`.
    package var description: String {
        var text = (tls ? "mqtts://" : "mqtt://")
        if let user { text += Self.encode(user) + (password == nil ? "" : ":***") + "@" }
        text += host.contains(":") ? "[\(host)]" : host
        return text + ":\(port)"
    }

    /// A URL as typed, with any password hidden (for errors about a URL that did not parse).
    static func masked(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text.lastIndex(of: "@"), at > scheme.upperBound else { return text }
        let credentials = text[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    /// A user name as a URL carries it: anything but letters, digits and `-._~` %-escaped (so
    /// what is shown reads back, and shows no control character).
    static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if byte < 0x80, scalar.properties.isAlphabetic || ("0"..."9").contains(Character(scalar)) || "-._~".unicodeScalars.contains(scalar) {
                result.unicodeScalars.append(scalar)
            } else {
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    private static func decode(_ text: Substring) throws(Invalid) -> String {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex, utf8.index(after: high) < utf8.endIndex,
                      let value = UInt8(String(decoding: [utf8[high], utf8[utf8.index(after: high)]], as: UTF8.self), radix: 16) else {
                    throw Invalid(description: "a bad %-escape in the broker's user or password")
                }
                bytes.append(value)
                index = utf8.index(high, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
