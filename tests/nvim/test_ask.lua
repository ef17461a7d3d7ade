-- Driven by tests/test_nvim.py: nvim --headless --clean with editors/nvim installed as a start
-- package (packpath), the way vim.pack / a plugin manager installs it.
-- Env: CODEASK_NVIM_PY (python), CODEASK_NVIM_FILE (file to open), CODEASK_NVIM_OUT (JSON results).
-- Framed by harness.lua.
local harness = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/harness.lua')
harness.run('test_ask.lua', function()
  vim.cmd('filetype on')
  local codeask = require('codeask').setup({
    cmd = { os.getenv('CODEASK_NVIM_PY'), '-m', 'codeask', 'serve' },
    settings = { hover = { enabled = true } },
  })
  local out = { commands = {} }
  for _, name in ipairs({ 'CodeaskAsk', 'CodeaskExplain', 'CodeaskReindex', 'CodeaskStatus', 'CodeaskOpenCitation' }) do
    out.commands[name] = vim.fn.exists(':' .. name) == 2
  end

  vim.cmd.edit(os.getenv('CODEASK_NVIM_FILE'))
  local bufnr = vim.api.nvim_get_current_buf()
  local win = vim.api.nvim_get_current_win()
  assert(vim.wait(30000, function() return #vim.lsp.get_clients({ name = 'codeask', bufnr = 0 }) > 0 end, 50),
    'codeask did not attach')
  local client = vim.lsp.get_clients({ name = 'codeask' })[1]
  assert(vim.wait(30000, function() return client.initialized end, 50), 'not initialized')
  out.root = client.config.root_dir
  out.server_version = client.server_info and client.server_info.version or vim.NIL

  -- wait for indexing to end
  local status
  assert(vim.wait(120000, function()
    local r = client:request_sync('workspace/executeCommand', { command = 'codeask.status', arguments = {} }, 5000)
    status = r and r.result
    return status ~= nil and not status.indexing and (status.chunks_total or 0) > 0 and status.vectors_pending == 0
  end, 200), 'indexing did not finish')
  out.status = status

  -- :checkhealth codeask on this working setup
  vim.cmd('checkhealth codeask')
  out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  vim.api.nvim_set_current_win(win)

  -- the module's ask (same code path as the command), then the quickfix list
  local done = false
  codeask.ask('How is the coupon discount applied?', function(e, result)
    out.ask_error = e and e.message or vim.NIL
    out.result = result
    done = true
  end)
  assert(vim.wait(60000, function() return done end, 50), 'ask timed out')
  out.qf = vim.tbl_map(function(item)
    return { filename = vim.api.nvim_buf_get_name(item.bufnr), lnum = item.lnum, text = item.text }
  end, vim.fn.getqflist())
  local floats = vim.tbl_filter(function(w) return vim.api.nvim_win_get_config(w).relative ~= '' end,
    vim.api.nvim_list_wins())
  out.floats = #floats
  out.float_linebreak = floats[1] ~= nil and vim.wo[floats[1]].wrap and vim.wo[floats[1]].linebreak
  out.float_lines = floats[1] ~= nil and vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(floats[1]), 0, -1, false) or {}

  -- a source whose file got 10 lines above it opens at its new lines (the server re-finds it)
  local idx, first  -- the first source in a file not open in a buffer (the server reads it from disk)
  for i, item in ipairs(vim.fn.getqflist()) do
    if item.bufnr ~= bufnr then idx, first = i, item break end
  end
  assert(first, 'no source outside the open file')
  local first_name = vim.api.nvim_buf_get_name(first.bufnr)
  local lines = vim.fn.readfile(first_name)
  local pad = {}
  for _ = 1, 10 do table.insert(pad, '# moved down') end
  vim.fn.writefile(vim.list_extend(pad, lines), first_name)
  -- chosen in the quickfix window: the item under the cursor, not the list's current one
  vim.fn.setqflist({}, 'a', { idx = idx == 1 and 2 or 1 })
  vim.cmd('copen')
  vim.api.nvim_win_set_cursor(0, { idx, 0 })
  local opened
  codeask.open_citation(function(lnum, note) opened = { lnum = lnum, note = note or vim.NIL } end)
  assert(vim.wait(30000, function() return opened ~= nil end, 50), 'open_citation did not answer')
  out.citation = { before = first.lnum, after = opened.lnum, note = opened.note,
                   cursor = vim.api.nvim_win_get_cursor(0)[1], file = vim.api.nvim_buf_get_name(0) }
  vim.fn.writefile(lines, first_name)
  vim.api.nvim_set_current_win(win)
  vim.cmd.buffer(bufnr)

  -- files retrieval found but the model was not sent follow the sources, marked
  out.qf_also = codeask.qf_items({
    sources = { { path = 'a.py', root = '/ws', spans = { { symbol = 'run' } } } },
    locations = { { uri = 'file:///ws/a.py', range = { start = { line = 9, character = 0 } } } },
    also_relevant = { { path = 'b.py', root = '/ws', start_line = 3, symbol = 'stop' } },
  })

  -- the user command itself
  vim.cmd('CodeaskAsk shipping cost for express delivery')
  assert(vim.wait(60000, function() return vim.fn.getqflist({ title = 0 }).title:find('shipping') ~= nil end, 50),
    ':CodeaskAsk did not fill the quickfix list')
  out.qf2_first = vim.api.nvim_buf_get_name(vim.fn.getqflist()[1].bufnr)

  -- :CodeaskStatus and :CodeaskReindex report through vim.notify
  local notes = {}
  vim.notify = function(msg) table.insert(notes, msg) end
  vim.cmd('CodeaskStatus')
  vim.cmd('CodeaskReindex')
  assert(vim.wait(60000, function() return #notes >= 2 end, 50), 'status/reindex did not report')
  out.notes = notes

  -- hover on apply_discount
  vim.api.nvim_set_current_win(win)
  local lnum, col
  for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local c = line:find('apply_discount(subtotal', 1, true)
    if c then lnum, col = i, c + 2 break end
  end
  assert(lnum, 'apply_discount not found')
  vim.api.nvim_win_set_cursor(win, { lnum, col })
  local params = vim.lsp.util.make_position_params(win, client.offset_encoding)
  local r = client:request_sync('textDocument/hover', params, 60000, bufnr)
  out.hover = r and r.result and r.result.contents and r.result.contents.value or vim.NIL

  -- :CodeaskExplain on a blank file: refused, said once (the error, no window/showMessage besides)
  local said = {}
  vim.notify = function(msg, level) table.insert(said, { msg = msg, level = level or vim.NIL }) end
  vim.lsp.handlers['window/showMessage'] = function(_, result)
    table.insert(said, { msg = 'showMessage: ' .. result.message, level = vim.NIL })
  end
  local blank = vim.fs.joinpath(vim.fs.dirname(os.getenv('CODEASK_NVIM_FILE')), 'blank.py')
  vim.fn.writefile({ '', '', '' }, blank)
  vim.cmd.edit(blank)
  assert(vim.wait(30000, function() return #vim.lsp.get_clients({ name = 'codeask', bufnr = 0 }) > 0 end, 50),
    'codeask did not attach to blank.py')
  local refused
  codeask.explain(1, 2, function(e) refused = e or vim.NIL end)
  assert(vim.wait(60000, function() return refused ~= nil end, 50), 'explain timed out')
  -- a round trip: a showMessage sent with the refusal has arrived
  client:request_sync('workspace/executeCommand', { command = 'codeask.status', arguments = {} }, 5000)
  out.explain_error = refused ~= vim.NIL and { code = refused.code, message = refused.message } or vim.NIL
  out.explain_said = said

  return out, client
end)
