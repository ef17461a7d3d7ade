-- Driven by tests/test_nvim.py: :CodeaskRelated in nvim --headless --clean with editors/nvim installed
-- as a start package. Env: CODEASK_NVIM_PY (python), CODEASK_NVIM_FILE (file to open),
-- CODEASK_NVIM_OUT (JSON results). Framed by harness.lua.
local harness = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/harness.lua')
harness.run('test_related.lua', function()
  vim.cmd('filetype on')
  local codeask = require('codeask').setup({
    cmd = { os.getenv('CODEASK_NVIM_PY'), '-m', 'codeask', 'serve' },
  })
  local out = { command = vim.fn.exists(':CodeaskRelated') == 2 }
  vim.cmd.edit(os.getenv('CODEASK_NVIM_FILE'))
  -- the cursor on a call of apply_discount: the word under the cursor is the symbol
  assert(vim.fn.search('apply_discount(') > 0, 'no call of apply_discount in the file')  -- the cursor on it
  -- at once, before the server is up (Neovim lists the client once `initialize` is answered, seconds
  -- later): the command says it waits and runs then
  out.starting = {}
  local notify = vim.notify
  vim.notify = function(msg, level) table.insert(out.starting, { msg = msg, level = level }) end
  out.up_before = codeask.client() ~= nil
  local done, statused = false, false
  codeask.related(nil, function(e, result)
    out.error = e and e.message or vim.NIL
    out.result = result
    done = true
  end)
  codeask.status(function(e, result) -- a second command while it starts: no second notice
    out.status_error = e and e.message or vim.NIL
    statused = true
  end)
  -- :checkhealth while it starts waits for it (it said "not running ... open a file")
  local win = vim.api.nvim_get_current_win()
  vim.cmd('checkhealth codeask')
  out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  vim.api.nvim_set_current_win(win)
  assert(vim.wait(120000, function() return done and statused end, 50), 'related timed out')
  vim.notify = notify
  local client = assert(codeask.client(), 'no client')
  out.not_indexed = codeask.format_status({ index_state = 'not-indexed', files = 0, chunks_total = 0 })
  out.title = vim.fn.getqflist({ title = 1 }).title
  out.qf = vim.tbl_map(function(item)
    return { filename = vim.api.nvim_buf_get_name(item.bufnr), lnum = item.lnum, text = item.text }
  end, vim.fn.getqflist())

  -- a symbol the index does not know: the server's InvalidParams message, as a warning
  out.said = {}
  vim.notify = function(msg, level) table.insert(out.said, { msg = msg, level = level }) end
  done = false
  codeask.related('no_such_symbol', function() done = true end)
  assert(vim.wait(30000, function() return done end, 50), 'related timed out')
  vim.notify = notify
  out.qf_after = #vim.fn.getqflist()

  return out, client
end)
