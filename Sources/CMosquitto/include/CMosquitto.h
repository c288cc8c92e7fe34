// libmosquitto (Debian libmosquitto-dev), the MQTT client seance's broker transport wraps.
// It is loaded when a broker is first used, not when seance starts: it brings libssl and
// libcrypto with it, and loading and relocating those cost every start-up a third more.
// The types come from its header; the calls go through the functions below, each the
// library's own function of the same name without the `seance_` prefix.
#include <stdbool.h>
#include <mosquitto.h>

/// Loads the library once; false (with the reason in `seance_mosquitto_error`) when it cannot.
bool seance_mosquitto_load(void);
const char *seance_mosquitto_error(void);

int seance_mosquitto_lib_init(void);
struct mosquitto *seance_mosquitto_new(const char *id, bool clean_session, void *obj);
void seance_mosquitto_destroy(struct mosquitto *mosq);
int seance_mosquitto_int_option(struct mosquitto *mosq, enum mosq_opt_t option, int value);
int seance_mosquitto_threaded_set(struct mosquitto *mosq, bool threaded);
int seance_mosquitto_username_pw_set(struct mosquitto *mosq, const char *username, const char *password);
int seance_mosquitto_tls_set(struct mosquitto *mosq, const char *cafile, const char *capath, const char *certfile,
                             const char *keyfile, int (*pw_callback)(char *buf, int size, int rwflag, void *userdata));
int seance_mosquitto_will_set(struct mosquitto *mosq, const char *topic, int payloadlen, const void *payload, int qos, bool retain);
void seance_mosquitto_connect_callback_set(struct mosquitto *mosq, void (*on_connect)(struct mosquitto *, void *, int));
void seance_mosquitto_disconnect_callback_set(struct mosquitto *mosq, void (*on_disconnect)(struct mosquitto *, void *, int));
void seance_mosquitto_message_callback_set(struct mosquitto *mosq,
                                           void (*on_message)(struct mosquitto *, void *, const struct mosquitto_message *));
void seance_mosquitto_publish_callback_set(struct mosquitto *mosq, void (*on_publish)(struct mosquitto *, void *, int));
void seance_mosquitto_subscribe_callback_set(struct mosquitto *mosq,
                                             void (*on_subscribe)(struct mosquitto *, void *, int, int, const int *));
int seance_mosquitto_connect_async(struct mosquitto *mosq, const char *host, int port, int keepalive);
int seance_mosquitto_reconnect_async(struct mosquitto *mosq);
int seance_mosquitto_loop(struct mosquitto *mosq, int timeout, int max_packets);
int seance_mosquitto_disconnect(struct mosquitto *mosq);
int seance_mosquitto_subscribe(struct mosquitto *mosq, int *mid, const char *sub, int qos);
int seance_mosquitto_unsubscribe(struct mosquitto *mosq, int *mid, const char *sub);
int seance_mosquitto_publish(struct mosquitto *mosq, int *mid, const char *topic, int payloadlen, const void *payload, int qos, bool retain);
const char *seance_mosquitto_strerror(int mosq_errno);
const char *seance_mosquitto_connack_string(int connack_code);
