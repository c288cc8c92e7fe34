import CMosquitto

/// libmosquitto's callbacks, each handing on to the transport whose client it is (the client's
/// context). They run on libmosquitto's thread and only hand on (the threading contract).
enum MosquittoCallbacks {
    static func install(on client: OpaquePointer) {
        seance_mosquitto_connect_callback_set(client) { _, context, code in transport(context)?.connected(code: code) }
        seance_mosquitto_publish_callback_set(client) { _, context, id in transport(context)?.published(id) }
        seance_mosquitto_subscribe_callback_set(client) { _, context, id, count, granted in
            // 0x80: refused (MQTT 3.1.1 §3.9.3).
            transport(context)?.subscribed(id, granted: count > 0 && granted != nil && granted![0] != 0x80)
        }
        seance_mosquitto_disconnect_callback_set(client) { _, context, code in transport(context)?.disconnected(code: code) }
        seance_mosquitto_message_callback_set(client) { _, context, message in
            guard let message else { return }
            transport(context)?.received(message.pointee)
        }
    }
}

/// The transport a client's context is (a C callback captures nothing: a function, not a method).
private func transport(_ context: UnsafeMutableRawPointer?) -> MQTTTransport? {
    context.map { Unmanaged<MQTTTransport>.fromOpaque($0).takeUnretainedValue() }
}
