-- codeask for Neovim 0.11+: the codeask language server (`codeask serve`) through the built-in
-- LSP client, plus :CodeaskAsk / :CodeaskExplain / :CodeaskRelated / :CodeaskReindex / :CodeaskStatus / :CodeaskOpenCitation
-- (plugin/codeask.lua) and `:checkhealth codeask` (lua/codeask/health.lua).
--
--   require('codeask').setup({
--     cmd = { 'codeask', 'serve' },        -- or { '/path/to/venv/bin/python', '-m', 'codeask', 'serve' }
--     settings = { retrieval = { topK = 20, maxFiles = 8 } },  -- the `codeask` settings, camelCase
--     keymaps = false,                      -- or { ask = '<leader>ca', explain = '<leader>ce' }
--   })
local M = {}

--- The oldest server this plugin works with (the `serverInfo.version` of `initialize`).
M.MIN_SERVER_VERSION = '0.1.0'
--- How users upgrade the server (codeask is installed from its repository or a wheel).
M.UPGRADE_COMMAND = 'pip install --upgrade /path/to/codeask'

M.defaults = {
  cmd = { 'codeask', 'serve' },
  filetypes = { 'python', 'javascript', 'typescript', 'typescriptreact', 'javascriptreact', 'go', 'rust',
                'java', 'c', 'cpp', 'cs', 'ruby', 'php', 'kotlin', 'lua', 'sh', 'markdown', 'rst', 'toml',
                'yaml', 'json' },
  root_markers = { '.codeask.toml', '.git', 'pyproject.toml', 'package.json', 'go.mod', 'Cargo.toml' },
  settings = {},
  keymaps = false,
}

M.config = nil

--- Compare dotted versions: -1, 0 or 1 (`'0.10.0' > '0.9.2'`; missing parts count as 0).
function M.compare_versions(a, b)
  local pa, pb = vim.split(tostring(a), '.', { plain = true }), vim.split(tostring(b), '.', { plain = true })
  for i = 1, math.max(#pa, #pb) do
    local x, y = tonumber((pa[i] or '0'):match('^%d+')) or 0, tonumber((pb[i] or '0'):match('^%d+')) or 0
    if x ~= y then return x < y and -1 or 1 end
  end
  return 0
end

--- Why a server of `version` cannot be used (one line with the upgrade command), or nil.
function M.version_problem(version)
  if not version or version == '' then
    return ('codeask: the server did not report its version; codeask >= %s is needed: %s')
      :format(M.MIN_SERVER_VERSION, M.UPGRADE_COMMAND)
  end
  if M.compare_versions(version, M.MIN_SERVER_VERSION) < 0 then
    return ('codeask: server %s is older than %s, which this plugin needs: upgrade it with `%s`')
      :format(version, M.MIN_SERVER_VERSION, M.UPGRADE_COMMAND)
  end
  return nil
end

--- Set up the language server (and, when asked, keymaps). Safe to call again with new options.
function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  local settings = M.config.settings
  vim.lsp.config('codeask', {
    cmd = M.config.cmd,
    filetypes = M.config.filetypes,
    root_markers = M.config.root_markers,
    init_options = settings,             -- read at startup
    settings = { codeask = settings },   -- answered to workspace/configuration (section "codeask")
    on_init = function(client, result)
      local info = result and result.serverInfo or {}
      local problem = M.version_problem(info.version)
      if problem then
        vim.schedule(function()
          vim.notify(problem, vim.log.levels.ERROR)
          client:stop()
        end)
      end
    end,
  })
  vim.lsp.enable('codeask')
  local keys = M.config.keymaps
  if type(keys) == 'table' then
    if keys.ask then
      vim.keymap.set('n', keys.ask, function()
        vim.ui.input({ prompt = 'codeask: ' }, function(q) if q and q ~= '' then M.ask(q) end end)
      end, { desc = 'codeask: ask a question' })
    end
    if keys.explain then
      vim.keymap.set('x', keys.explain, ':CodeaskExplain<CR>', { desc = 'codeask: explain selection', silent = true })
    end
  end
  return M
end

--- The running codeask client (for the current buffer's root when there are several), or nil.
function M.client()
  return vim.lsp.get_clients({ name = 'codeask', bufnr = 0 })[1] or vim.lsp.get_clients({ name = 'codeask' })[1]
end

--- How long a command waits for the language server to come up (milliseconds): Neovim lists the
--- client once the server has answered `initialize` (about 2 s on an idle 2-core machine, 8 s busy).
M.START_WAIT_MS = 30000

--- The commands waiting for the server to come up (nil when none waits): one notice and one poll for all.
local queued = nil

--- Call `run(client)` with the running codeask client; when the current buffer starts one (setup()
--- was called and its filetype is one of `filetypes`) that is not up yet, say so once and call it
--- (and every command run meanwhile) once it is, or say it did not start within M.START_WAIT_MS;
--- else say it is not running and how to start it.
local function with_client(run)
  local c = M.client()
  if c then return run(c) end
  if not (M.config and vim.tbl_contains(M.config.filetypes, vim.bo.filetype)) then
    local hint = M.config and 'open a file in a project, or see :checkhealth codeask'
      or "call require('codeask').setup() in your config"
    return vim.notify('codeask: the language server is not running (' .. hint .. ')', vim.log.levels.ERROR)
  end
  if queued then return table.insert(queued, run) end
  queued = { run }
  vim.notify('codeask: the language server is starting; the command runs when it is up', vim.log.levels.INFO)
  local waited = 0
  local function poll()
    local found = M.client()
    if not found and waited < M.START_WAIT_MS then
      waited = waited + 100
      return vim.defer_fn(poll, 100)
    end
    local runs = queued
    queued = nil
    if not found then
      return vim.notify(('codeask: the language server did not start in %d s (see :checkhealth codeask and :LspLog)')
        :format(M.START_WAIT_MS / 1000), vim.log.levels.ERROR)
    end
    for _, r in ipairs(runs) do r(found) end
  end
  vim.defer_fn(poll, 100)
end

--- The answer's markdown as the float shows it: each link to code as its text (`[app.py:10-20](file:///...)`
--- -> `app.py:10-20`). Neovim wraps a line by its concealed characters too, so a hidden 80-character
--- URI broke a short label in two; the quickfix list holds the locations.
function M.float_text(markdown)
  return ((markdown or ''):gsub('%[([^%]\n]*)%]%(file://[^%)\n]*%)', '%1'))
end

local function show(markdown)
  local _, win = vim.lsp.util.open_floating_preview(vim.split(M.float_text(markdown), '\n'), 'markdown',
    { border = 'rounded', max_width = 100, max_height = 40, focus_id = 'codeask' })
  -- a line wider than the window (a source's label and its link) wraps between words, not inside one
  if win and vim.api.nvim_win_is_valid(win) then vim.wo[win].linebreak = true end
end

--- The line a span opens at (1-based): its `open_line` (the labelled definition the question is
--- about) when it lies inside the span, else its first line.
local function open_line(span)
  local first, last, line = span.start_line, span.end_line, span.open_line
  if type(line) == 'number' and type(first) == 'number' and line >= first and line <= (last or first) then return line end
  return first
end

--- Quickfix items from the LSP Locations of a codeask.ask / codeask.explain result: one per span
--- (a source lists its spans in `spans`, best first, in the order of the Locations), each at its
--- `open_line`, its text the span's label and lines, then one per file of `also_relevant` (found,
--- not sent to the model), its text saying so.
function M.qf_items(result)
  local spans_of = {}
  for _, src in ipairs(result.sources or {}) do
    for _, span in ipairs((type(src.spans) == 'table' and #src.spans > 0) and src.spans or { src }) do
      table.insert(spans_of, { src = src, span = span })
    end
  end
  local items = {}
  for i, loc in ipairs(result.locations or {}) do
    local s = spans_of[i] or { src = {}, span = {} }
    local symbol, anchor = s.span.symbol, type(s.span.anchor) == 'table' and s.span.anchor or nil
    local first, last = s.span.start_line, s.span.end_line
    local lines = (type(first) == 'number' and type(last) == 'number') and (' (lines %d-%d)'):format(first, last) or ''
    table.insert(items, {
      filename = vim.uri_to_fname(loc.uri),
      lnum = open_line(s.span) or (loc.range.start.line + 1),  -- LSP lines are 0-based
      col = 1,
      text = ((type(symbol) == 'string' and symbol ~= '') and symbol or (s.src.path or '')) .. lines,
      -- what re-finds the span (M.open_citation)
      user_data = anchor and { anchor = anchor, start_line = s.span.start_line, end_line = s.span.end_line,
                               open_line = open_line(s.span) } or nil,
    })
  end
  -- what retrieval found but the model was not sent (`also_relevant`), after the sources, marked
  for _, src in ipairs(result.also_relevant or {}) do
    if type(src.root) == 'string' and type(src.path) == 'string' and type(src.start_line) == 'number' then
      local symbol = (type(src.symbol) == 'string' and src.symbol ~= '') and src.symbol or src.path
      table.insert(items, {
        filename = src.root .. '/' .. src.path,
        lnum = open_line(src),
        col = 1,
        text = 'not sent to the model: ' .. symbol,
      })
    end
  end
  return items
end

--- JSON-RPC InvalidParams: the server refused the input (e.g. explain on a secret or binary file);
--- its message is the one line to show (the server does not also send window/showMessage).
local INVALID_PARAMS = -32602

local function command(name, args, on_result)
  with_client(function(c)
    c:request('workspace/executeCommand', { command = name, arguments = args }, function(err, result)
      if err then
        local level = err.code == INVALID_PARAMS and vim.log.levels.WARN or vim.log.levels.ERROR
        vim.notify('codeask: ' .. err.message, level)
      end
      on_result(err, result)
    end)
  end)
end

--- Ask a question: the sources fill the quickfix list, the answer opens in a float.
--- `on_done(err, result)` is optional.
function M.ask(question, on_done)
  command('codeask.ask', { question }, function(err, result)
    if not err then
      vim.fn.setqflist({}, ' ', { title = 'codeask: ' .. question, items = M.qf_items(result) })
      show(result.markdown)
    end
    if on_done then on_done(err, result) end
  end)
end

--- Explain lines `line1`..`line2` (1-based) of the current buffer.
function M.explain(line1, line2, on_done)
  local range = { start = { line = line1 - 1, character = 0 }, ['end'] = { line = line2, character = 0 } }
  command('codeask.explain', { vim.uri_from_bufnr(0), range }, function(err, result)
    if not err then
      vim.fn.setqflist({}, ' ', { title = 'codeask: related code', items = M.qf_items(result) })
      show(result.markdown)
    end
    if on_done then on_done(err, result) end
  end)
end

--- Quickfix items of a codeask.related result: its definitions, then callers, then callees, each at
--- its LSP location; the text names the kind and the symbol, `-> name` for a callee reached by another
--- name, `(sure 0.3)` for a link less than sure, and `(of path:line)` when the symbol has several
--- definitions (each caller and callee names the one it links to).
function M.related_items(result)
  local items = {}
  local several = #(result.definitions or {}) > 1
  for _, kind in ipairs({ 'definitions', 'callers', 'callees' }) do
    for _, x in ipairs(result[kind] or {}) do
      local loc = x.location
      if type(loc) == 'table' and type(loc.uri) == 'string' and type(loc.range) == 'table' then
        local symbol = (type(x.symbol) == 'string' and x.symbol ~= '') and x.symbol or '(top level)'
        local text = kind:sub(1, -2) .. ': ' .. symbol
        if kind == 'callees' and type(x.name) == 'string' and symbol:match('[^.]+$') ~= x.name then
          text = text .. ' -> ' .. x.name
        end
        if type(x.sure) == 'number' and x.sure < 1 then text = text .. string.format(' (sure %.1f)', x.sure) end
        if several and type(x.of) == 'string' and x.of ~= '' then text = text .. ' (of ' .. x.of .. ')' end
        table.insert(items, {
          filename = vim.uri_to_fname(loc.uri),
          lnum = loc.range.start.line + 1,   -- LSP lines are 0-based
          col = loc.range.start.character + 1,
          text = text,
        })
      end
    end
  end
  return items
end

--- Related code of `symbol` (the word under the cursor when empty or nil) from the symbol graph:
--- definitions, callers and callees fill the quickfix list. `on_done(err, result)` is optional.
function M.related(symbol, on_done)
  if symbol == nil or symbol == '' then symbol = vim.fn.expand('<cword>') end
  command('codeask.related', { symbol }, function(err, result)
    if not err then
      vim.fn.setqflist({}, ' ', { title = 'codeask: related ' .. symbol, items = M.related_items(result) })
      if type(result.alias) == 'table' then -- asked by the name a file imports it under
        vim.notify(('codeask: %s is %s, imported under that name at %s:%d'):format(
          symbol, result.symbol, result.alias.path, result.alias.line), vim.log.levels.INFO)
      end
      if result.truncated then
        vim.notify('codeask: the lists of ' .. symbol .. ' were cut (codeask related lists the surest)', vim.log.levels.INFO)
      end
    end
    if on_done then on_done(err, result) end
  end)
end

--- One line for a codeask.status result.
function M.format_status(s)
  local llm = '; LLM: ' .. (s.llm or 'none (answers list the sources)')
  if s.index_state == 'not-indexed' then return 'codeask: not indexed yet (the first question starts indexing)' .. llm end
  if s.index_state == 'waiting' then
    return 'codeask: waiting: ' .. (s.lock_holder or s.index_message or 'another process is updating the index') .. llm
  end
  if s.stale and s.files == nil then return 'codeask: indexing, counts not known yet (the index is busy)' .. llm end
  local line = ('codeask: %d files, %d chunks'):format(s.files or 0, s.chunks_total or 0)
  if (s.vectors_pending or 0) > 0 then line = line .. (', %d waiting for embeddings'):format(s.vectors_pending) end
  if s.indexing then line = line .. ' (indexing' .. (s.index_message and (': ' .. s.index_message) or '') .. ')' end
  return line .. llm
end

--- The quickfix item :CodeaskOpenCitation opens: the one under the cursor in the quickfix window,
--- else the list's current one. Returns its index and the list's items.
local function chosen_item()
  local qf = vim.fn.getqflist({ idx = 0, items = 0 })
  local info = vim.fn.getwininfo(vim.api.nvim_get_current_win())[1]
  if info and info.quickfix == 1 and info.loclist == 0 then return vim.fn.line('.'), qf.items end
  return qf.idx, qf.items
end

--- Open a quickfix item where its code is now (the one under the cursor in the quickfix window, else
--- the list's current one): `codeask.resolveCitation` re-finds the cited span by its anchor (moved
--- lines, or the symbol's new lines with a note when it changed) and it opens at the span's open
--- line there; an item without an anchor, or a failed request, opens the item's line.
function M.open_citation(on_done)
  local idx, items = chosen_item()
  local item = items[idx]
  if not item then return end
  local function jump(lnum, note)
    vim.cmd('cc ' .. idx)
    pcall(vim.api.nvim_win_set_cursor, 0, { lnum, 0 })
    if note and note ~= '' then vim.notify('codeask: ' .. note) end
    if on_done then on_done(lnum, note) end
  end
  local data = item.user_data
  if type(data) ~= 'table' or type(data.anchor) ~= 'table' then return jump(item.lnum) end
  local args = { uri = vim.uri_from_fname(vim.api.nvim_buf_get_name(item.bufnr)), start_line = data.start_line,
                 end_line = data.end_line, symbol = data.anchor.symbol, hash = data.anchor.hash,
                 open_line = data.open_line }
  command('codeask.resolveCitation', { args }, function(err, result)
    if err or type(result) ~= 'table' or type(result.start_line) ~= 'number' then return jump(item.lnum) end
    -- the server moves the span's open line with it (the first line of a changed definition)
    local lnum = type(result.open_line) == 'number' and result.open_line > 0 and result.open_line or result.start_line
    jump(lnum, result.status ~= 'same' and result.note or nil)
  end)
end

--- Re-index the workspace now.
function M.reindex(on_done)
  command('codeask.reindex', {}, function(err, result)
    if not err then
      vim.notify(('codeask: re-indexed: %d files changed, %d chunks embedded'):format(
        result.files_changed or 0, result.chunks_embedded or 0))
    end
    if on_done then on_done(err, result) end
  end)
end

--- Show the index status.
function M.status(on_done)
  command('codeask.status', {}, function(err, result)
    if not err then vim.notify(M.format_status(result)) end
    if on_done then on_done(err, result) end
  end)
end

return M
