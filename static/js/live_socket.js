/* A websocket to this site that reconnects by itself (with back-off) and parses JSON messages.
   GridLive.connect(path, {onMessage, onState}) -> {close()} */
(function () {
  "use strict";
  function connect(path, handlers) {
    var socket = null;
    var closedByUs = false;
    var delay = 500;
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    function state(text) { if (handlers.onState) { handlers.onState(text); } }
    function open() {
      state("connecting…");
      socket = new WebSocket(scheme + window.location.host + path);
      socket.onopen = function () { delay = 500; state("live"); };
      socket.onmessage = function (event) {
        var message;
        try { message = JSON.parse(event.data); } catch (error) { return; }
        handlers.onMessage(message);
      };
      socket.onclose = function () {
        if (closedByUs) { return; }
        state("disconnected; retrying in " + Math.round(delay / 1000) + " s");
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 15000);
      };
    }
    open();
    return {
      close: function () { closedByUs = true; if (socket) { socket.close(); } },
      reconnect: function () { if (socket) { socket.close(); } }
    };
  }
  window.GridLive = { connect: connect };
})();
