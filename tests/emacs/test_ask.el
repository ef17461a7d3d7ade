;;; test_ask.el --- driven by tests/test_emacs.py  -*- lexical-binding: t -*-
;; emacs --batch with editors/emacs/codeask.el loaded: registers codeask's server for python-mode as
;; docs/emacs.md does, opens CODEASK_EMACS_FILE, starts eglot as M-x eglot does, runs `codeask.ask'
;; and prints one line per result item on stdout:
;;   SERVER <name> <version>   (serverInfo of the initialize reply)
;;   SOURCE <root>/<path> <start_line> <end_line>   (each span of the answer's sources, 1-based)
;;   LOCATION <file> <line>    (each Location, as `codeask-locations' reads it)
;;   XREF <file> <line> <summary>  (each xref item `codeask-xrefs' makes: where M-x codeask-ask opens it)
;;   ANSWER <characters>       (M-x codeask-ask: the size of the *codeask* buffer)
;;   XREFS <count>             (M-x codeask-ask: the items of its *xref* list)
;;   SHUTDOWN <seconds>        (eglot-shutdown returned: shutdown and exit answered)
;; Env: CODEASK_EMACS_PY (python), CODEASK_EMACS_FILE, CODEASK_EMACS_QUESTION.
;; Any error exits with code 1 instead of hanging.

(setq codeask-server-command (list (getenv "CODEASK_EMACS_PY") "-m" "codeask" "serve"))
(codeask-eglot-setup 'python-mode)
(setq eglot-sync-connect t)                 ; `eglot' returns once the server is initialized

(defun codeask-test--xref-items ()
  "The number of items in the current xref buffer (runs of the `xref-item' text property)."
  (let ((count 0) (pos (point-min)))
    (while (setq pos (next-single-property-change pos 'xref-item))
      (when (get-text-property pos 'xref-item) (setq count (1+ count))))
    count))

(condition-case err
    (progn
      (find-file (getenv "CODEASK_EMACS_FILE"))
      (call-interactively #'eglot)
      (let ((server (eglot-current-server)))
        (unless server (error "eglot did not connect"))
        (let ((info (plist-get (eglot--server-info server) :version)))
          (princ (format "SERVER %s %s\n" (plist-get (eglot--server-info server) :name) info))))
      (let ((result (codeask--request (getenv "CODEASK_EMACS_QUESTION"))))
        (seq-doseq (source (plist-get result :sources))
          (seq-doseq (span (or (plist-get source :spans) (vector source)))
            (princ (format "SOURCE %s %d %d\n"
                           (expand-file-name (plist-get source :path) (plist-get source :root))
                           (plist-get span :start_line) (plist-get span :end_line)))))
        (dolist (loc (codeask-locations result))
          (princ (format "LOCATION %s %d\n" (car loc) (cadr loc))))
        (dolist (item (codeask-xrefs result))
          (let ((loc (xref-item-location item)))
            (princ (format "XREF %s %d %s\n" (xref-location-group loc) (xref-location-line loc)
                           (xref-item-summary item))))))
      (codeask-ask (getenv "CODEASK_EMACS_QUESTION"))      ; the command a user runs
      (princ (format "ANSWER %d\n" (with-current-buffer "*codeask*" (buffer-size))))
      (princ (format "XREFS %d\n" (with-current-buffer "*xref*" (codeask-test--xref-items))))
      (let ((start (float-time)))
        (eglot-shutdown (eglot-current-server) nil 120)
        (princ (format "SHUTDOWN %.1f\n" (- (float-time) start))))
      (kill-emacs 0))
  (error (princ (format "ERROR %s\n" (error-message-string err)))
         (kill-emacs 1)))
