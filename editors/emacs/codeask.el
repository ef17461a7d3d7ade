;;; codeask.el --- Ask questions about your code with codeask, through eglot  -*- lexical-binding: t -*-

;; Package-Requires: ((emacs "28.1") (eglot "1.9"))

;;; Commentary:

;; codeask's language server (`codeask serve', stdio) under eglot, the LSP client of Emacs (built in
;; from Emacs 29; Debian's `elpa-eglot' for Emacs 28).  `codeask-eglot-setup' registers the server
;; for some major modes; `M-x codeask-ask' sends the server's `codeask.ask' command
;; (workspace/executeCommand) and shows the answer in *codeask* and its cited code as an xref list.
;; See docs/emacs.md.

;;; Code:

(require 'eglot)
(require 'xref)
(require 'subr-x)

(defgroup codeask nil "Ask questions about your code with codeask." :group 'tools)

(defcustom codeask-server-command '("codeask" "serve")
  "Command that starts codeask's language server on stdio.
For a virtual environment: (\"/path/to/venv/bin/codeask\" \"serve\")."
  :type '(repeat string))

(defcustom codeask-ask-timeout 600
  "Seconds to wait for an answer (the first ask of a folder waits for its keyword index)."
  :type 'number)

(defun codeask-eglot-setup (modes)
  "Make eglot start codeask's server for buffers of MODES (a major mode or a list of them).
eglot runs one server per buffer: in these modes codeask replaces any other language server."
  (add-to-list 'eglot-server-programs (cons modes codeask-server-command)))

(defun codeask--request (question)
  "The `codeask.ask' result for QUESTION from the current buffer's server, as a plist.
Signals an error when the buffer has no eglot server, with the server's message when it refuses."
  (jsonrpc-request (eglot--current-server-or-lose) :workspace/executeCommand
                   `(:command "codeask.ask" :arguments [(:question ,question)])
                   :timeout codeask-ask-timeout))

(defun codeask-locations (result)
  "The cited locations of RESULT (a `codeask.ask' plist): a list of (FILE LINE), LINE 1-based."
  (mapcar (lambda (loc)
            (list (eglot--uri-to-path (plist-get loc :uri))
                  (1+ (plist-get (plist-get (plist-get loc :range) :start) :line))))
          (plist-get result :locations)))

(defun codeask-spans (result)
  "The cited spans of RESULT, in the order of its Locations: each (OPEN-LINE SYMBOL), OPEN-LINE the
span's `open_line' (1-based: where the definition its label names begins) when it lies inside the
span, else nil; SYMBOL its label, \"\" when none."
  (let (spans)
    (seq-doseq (source (plist-get result :sources))
      (seq-doseq (span (or (plist-get source :spans) (vector source)))
        (let ((open (plist-get span :open_line))
              (start (plist-get span :start_line))
              (end (plist-get span :end_line))
              (symbol (plist-get span :symbol)))
          (push (list (and (integerp open) (integerp start) (integerp end) (<= start open end) open)
                      (if (stringp symbol) symbol ""))
                spans))))
    (nreverse spans)))

(defun codeask-xrefs (result)
  "One xref item per cited span of RESULT (a `codeask.ask' plist), at the span's open line
\(`codeask-spans'), else at its first line, its summary the file, line and label."
  (let ((spans (codeask-spans result)))
    (seq-map-indexed
     (lambda (loc i)
       (let* ((span (nth i spans))
              (line (or (car span) (cadr loc)))
              (label (or (cadr span) "")))
         (xref-make (string-trim (format "%s:%d %s" (file-name-nondirectory (car loc)) line label))
                    (xref-make-file-location (car loc) line 0))))
     (codeask-locations result))))

(defun codeask-ask (question)
  "Ask codeask QUESTION about the current project.
The answer (Markdown) goes to the *codeask* buffer, the code it cites to an xref list."
  (interactive "sAsk codeask: ")
  (let* ((result (codeask--request question))
         (xrefs (codeask-xrefs result)))
    (with-current-buffer (get-buffer-create "*codeask*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (or (plist-get result :markdown) "")))
      (goto-char (point-min))
      (display-buffer (current-buffer)))
    (if xrefs
        (xref-show-xrefs (lambda () xrefs) nil)
      (message "codeask: no code found for this question"))))

(provide 'codeask)
;;; codeask.el ends here
