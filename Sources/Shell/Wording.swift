/// Words as an error or a notice lists them.
package enum Wording {
    /// `items` as a sentence lists them: `a`, `a or b`, `a, b or c` (`conjunction` "or" or "and").
    package static func list(_ items: [String], _ conjunction: String) -> String {
        guard let last = items.last else { return "" }
        return items.count == 1 ? last : items.dropLast().joined(separator: ", ") + " \(conjunction) " + last
    }
}
