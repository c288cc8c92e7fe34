// libmosquitto (Debian libmosquitto-dev), the MQTT client seance's broker transport wraps.
// Nothing is variadic, so the header is used as it is.
#include <mosquitto.h>
