import Foundation
import Wire

/// Every message from the recipient up to fragment `sequence` has been shown (kind 7).
package struct ReadReceipt: SequenceMark, Equatable {
    package static let code = KindTable.read
    package var recipient: Data
    package var sequence: UInt32

    package init(recipient: Data, sequence: UInt32) {
        self.recipient = recipient
        self.sequence = sequence
    }
}
